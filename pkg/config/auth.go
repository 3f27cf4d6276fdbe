package config

import (
	"errors"
	"net/http"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// A backend's per-caller credentials (INTERFACE.md, Per-user backend
// credentials):
//
//	auth:
//	  type: token_exchange                       # RFC 8693; needs --auth-issuer on the edge
//	  token_url: https://idp.example/oauth2/token
//	  audience: https://tickets.example
//	  scopes: [tickets.read]
//	  client_id: fleetgate-edge
//	  client_secret: {file: /run/secrets/sts}    # references only
//
// Each caller's calls then carry a token the edge obtained for that
// caller; the controller probes with a token of the client itself (client
// credentials grant). The section excludes transport stdio and a static
// Authorization header.
//
//	auth:
//	  type: user_oauth                           # each user signs in to this backend
//	  client_id: fleetgate                       # or absent: dynamic client registration
//	  scopes: [docs.read]
//	  before_sign_in: sign_in_tool               # sign_in_tool | hidden

// auth decodes a backend's auth section; absent or null is nil.
func (d *decoder) auth(e entry) (*credential.Auth, error) {
	if e.val == nil || isNull(e.val) {
		return nil, nil
	}
	m, err := d.mapping(e.val, e.path, "type", "token_url", "audience", "scopes", "client_id", "client_secret", "before_sign_in")
	if err != nil {
		return nil, err
	}
	a := &credential.Auth{}
	for _, f := range []struct {
		key string
		dst *string
	}{{"type", &a.Type}, {"token_url", &a.TokenURL}, {"audience", &a.Audience}, {"client_id", &a.ClientID},
		{"before_sign_in", &a.BeforeSignIn}} {
		if *f.dst, err = d.str(orAt(m, f.key, e.val, e.path)); err != nil {
			return nil, err
		}
	}
	if a.Scopes, err = d.stringSeq(orAt(m, "scopes", e.val, e.path), credential.MaxScopes, "scopes"); err != nil {
		return nil, err
	}
	if se, ok := m["client_secret"]; ok {
		if a.ClientSecret, err = d.ref(se); err != nil {
			return nil, err
		}
	}
	if err := a.Validate(); err != nil {
		var ae *credential.AuthError
		if !errors.As(err, &ae) {
			return nil, &FieldError{File: d.file, Line: e.line(), Field: e.path, Msg: err.Error(), Err: err}
		}
		key, _, _ := strings.Cut(ae.Field, "[")
		line := e.line()
		if fe, ok := m[key]; ok {
			line = fe.line()
		}
		return nil, &FieldError{File: d.file, Line: line, Field: join(e.path, ae.Field), Msg: ae.Msg, Err: err}
	}
	return a, nil
}

// checkAuth checks b's auth section against the rest of b: it is valid
// (credential.Auth.Validate), not of a stdio backend, and not beside a
// static Authorization header. It returns the field ("auth.token_url",
// "headers.Authorization") and why.
func checkAuth(b Backend) (string, string) {
	if b.Auth == nil {
		return "", ""
	}
	if err := b.Auth.Validate(); err != nil {
		var ae *credential.AuthError
		if errors.As(err, &ae) {
			return "auth." + ae.Field, ae.Msg
		}
		return "auth", err.Error()
	}
	if b.Transport == TransportStdio {
		return "auth", "is not for transport stdio (a process of each host, not an account of each caller)"
	}
	for _, name := range b.Headers.Names() {
		if http.CanonicalHeaderKey(name) == "Authorization" {
			return "headers.Authorization", "excludes auth: the backend's Authorization is each caller's exchanged token"
		}
	}
	return "", ""
}
