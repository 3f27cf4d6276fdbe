package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"go.yaml.in/yaml/v3"

	"github.com/fleetgate/fleetgate/pkg/backendnet"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// A backend's credentials and destination (INTERFACE.md, Backend
// credentials):
//
//	headers:                                      # sent on every request to the backend
//	  Authorization: {env: ALPHA_AUTHORIZATION}   # or {file: /run/secrets/alpha}
//	allow_link_local: false                       # default: link-local and metadata hosts refused
//
// A literal header value is an error, and so is a URL with user info. No
// message here quotes a header value, a malformed reference or an invalid
// header name: any of them may be a pasted secret.

// literalMsg is the refusal of a literal header value.
var literalMsg = credential.ErrLiteral.Error()

// headers decodes a backend's headers section.
func (d *decoder) headers(e entry) (credential.Headers, error) {
	if e.val == nil || isNull(e.val) {
		return nil, nil
	}
	if e.val.Kind != yaml.MappingNode {
		return nil, d.errorf(e.line(), e.path, "want a mapping of header names to {env: ...} or {file: ...}, got %s", kindName(e.val))
	}
	if n := len(e.val.Content) / 2; n > credential.MaxHeaders {
		return nil, d.errorf(e.line(), e.path, "%d headers, limit %d", n, credential.MaxHeaders)
	}
	out := credential.Headers{}
	lines := map[string]int{}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		k, v := deref(e.val.Content[i]), deref(e.val.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, d.errorf(k.Line, index(e.path, i/2), "want a header name, got %s", kindName(k))
		}
		name, err := credential.CheckName(k.Value)
		if err != nil {
			return nil, d.errorf(k.Line, index(e.path, i/2), "%s", err.Error())
		}
		path := join(e.path, name)
		if line, dup := lines[name]; dup {
			return nil, d.errorf(k.Line, path, "header %s is already set at line %d (names are case-insensitive)", name, line)
		}
		lines[name] = k.Line
		ref, err := d.ref(entry{key: k, val: v, path: path})
		if err != nil {
			return nil, err
		}
		out[name] = ref
	}
	return out, nil
}

// ref decodes {env: NAME} or {file: /path}.
func (d *decoder) ref(e entry) (credential.Ref, error) {
	switch {
	case e.val.Kind == yaml.ScalarNode && !isNull(e.val):
		return credential.Ref{}, d.errorf(e.line(), e.path, "%s", literalMsg)
	case e.val.Kind != yaml.MappingNode:
		return credential.Ref{}, d.errorf(e.line(), e.path, "want {env: NAME} or {file: /path}, got %s", kindName(e.val))
	}
	m, err := d.mapping(e.val, e.path, "env", "file")
	if err != nil {
		return credential.Ref{}, err
	}
	var r credential.Ref
	for _, f := range []struct {
		key string
		dst *string
	}{{"env", &r.Env}, {"file", &r.File}} {
		fe, ok := m[f.key]
		if !ok {
			continue
		}
		if fe.val.Kind != yaml.ScalarNode || fe.val.ShortTag() != "!!str" || fe.val.Value == "" {
			return credential.Ref{}, d.errorf(fe.line(), fe.path, "want a non-empty string, got %s", kindName(fe.val))
		}
		*f.dst = fe.val.Value
	}
	if err := r.Validate(); err != nil {
		return credential.Ref{}, d.errorf(e.line(), e.path, "%s", err.Error())
	}
	return r, nil
}

// boolean reads true or false; absent or null is false.
func (d *decoder) boolean(e entry) (bool, error) {
	if e.val == nil || isNull(e.val) {
		return false, nil
	}
	if e.val.Kind != yaml.ScalarNode || e.val.ShortTag() != "!!bool" {
		return false, d.errorf(e.line(), e.path, "want true or false, got %s", describe(e.val))
	}
	var b bool
	if err := e.val.Decode(&b); err != nil {
		return false, d.errorf(e.line(), e.path, "want true or false, got %s", describe(e.val))
	}
	return b, nil
}

// checkDestination checks what checkURL does not: no user info, and no
// link-local or metadata host unless allowed. raw is a URL checkURL
// accepted. The message names the host at most, never the URL.
func checkDestination(raw string, allowLinkLocal bool) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "is not an http(s) URL"
	}
	if err := backendnet.CheckURL(u, allowLinkLocal); err != nil {
		if errors.Is(err, backendnet.ErrLinkLocal) {
			return fmt.Sprintf("host %s is a link-local or cloud metadata address; set allow_link_local: true to allow it", u.Hostname())
		}
		return err.Error()
	}
	return ""
}

// checkHeaders checks headers given by the admin API; it returns the field
// ("headers" or "headers.<Name>") and the message.
func checkHeaders(h credential.Headers) (string, string) {
	if len(h) > credential.MaxHeaders {
		return "headers", fmt.Sprintf("%d headers, limit %d", len(h), credential.MaxHeaders)
	}
	seen := map[string]bool{}
	for _, name := range h.Names() {
		canon, err := credential.CheckName(name)
		if err != nil {
			return "headers", err.Error()
		}
		if canon != name || seen[canon] {
			return "headers." + canon, "header names are case-insensitive: give each once, in canonical form"
		}
		seen[canon] = true
		if err := h[name].Validate(); err != nil {
			return "headers." + name, err.Error()
		}
	}
	return "", ""
}

// ParseHeadersJSON reads the headers of an admin API body: header names
// to references as JSON objects (credential.ParseRefJSON). Names are
// canonicalized. Errors are *FieldError naming "headers" or
// "headers.<Name>"; none quotes a value.
func ParseHeadersJSON(raw map[string]json.RawMessage) (credential.Headers, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if len(raw) > credential.MaxHeaders {
		return nil, &FieldError{Field: "headers", Msg: fmt.Sprintf("%d headers, limit %d", len(raw), credential.MaxHeaders)}
	}
	out := credential.Headers{}
	for name, v := range raw {
		canon, err := credential.CheckName(name)
		if err != nil {
			return nil, &FieldError{Field: "headers", Msg: err.Error(), Err: err}
		}
		if _, dup := out[canon]; dup {
			return nil, &FieldError{Field: "headers." + canon, Msg: "header is given twice (names are case-insensitive)"}
		}
		ref, err := credential.ParseRefJSON(v)
		if err != nil {
			return nil, &FieldError{Field: "headers." + canon, Msg: err.Error(), Err: err}
		}
		out[canon] = ref
	}
	return out, nil
}

// stringList decodes a list of strings (a stdio backend's args); bounds are
// checked by checkStdio.
func (d *decoder) stringList(e entry) ([]string, error) {
	return d.stringSeq(e, stdio.MaxArgs, "args")
}

// envRefs decodes a stdio backend's env: variable names to {env: ...} or
// {file: ...}, never a literal (it may be a pasted secret).
func (d *decoder) envRefs(e entry) (map[string]credential.Ref, error) {
	if e.val == nil || isNull(e.val) {
		return nil, nil
	}
	if e.val.Kind != yaml.MappingNode {
		return nil, d.errorf(e.line(), e.path, "want a mapping of variable names to {env: ...} or {file: ...}, got %s", kindName(e.val))
	}
	if n := len(e.val.Content) / 2; n > stdio.MaxEnv {
		return nil, d.errorf(e.line(), e.path, "%d variables, limit %d", n, stdio.MaxEnv)
	}
	out := map[string]credential.Ref{}
	for i := 0; i+1 < len(e.val.Content); i += 2 {
		k, v := deref(e.val.Content[i]), deref(e.val.Content[i+1])
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return nil, d.errorf(k.Line, index(e.path, i/2), "want a variable name, got %s", kindName(k))
		}
		path := join(e.path, k.Value)
		if _, dup := out[k.Value]; dup {
			return nil, d.errorf(k.Line, path, "variable is already set")
		}
		ref, err := d.ref(entry{key: k, val: v, path: path})
		if err != nil {
			return nil, err
		}
		out[k.Value] = ref
	}
	if err := stdio.CheckEnv(out); err != nil {
		return nil, d.errorf(e.line(), e.path, "%s", err.Error())
	}
	return out, nil
}

// CheckRefs checks every header reference of f against the limits the
// operator set (credential.Limits: a directory and a variable prefix).
// The error is a *FieldError naming file and the reference's field
// ("groups[0].backends[1].headers.Authorization") and the reference, never
// a value.
func CheckRefs(file string, f *Fleet, l credential.Limits) error {
	for gi, g := range f.Groups {
		for bi, b := range g.Backends {
			for _, name := range b.Headers.Names() {
				if err := l.Check(b.Headers[name]); err != nil {
					return &FieldError{File: file, Field: fmt.Sprintf("groups[%d].backends[%d].headers.%s", gi, bi, name), Msg: err.Error(), Err: err}
				}
			}
			if b.Auth != nil && b.Auth.ClientSecret != (credential.Ref{}) {
				if err := l.Check(b.Auth.ClientSecret); err != nil {
					return &FieldError{File: file, Field: fmt.Sprintf("groups[%d].backends[%d].auth.client_secret", gi, bi), Msg: err.Error(), Err: err}
				}
			}
		}
	}
	return nil
}

// ErrUnboundRef is matched by CheckBinding's refusals.
var ErrUnboundRef = errors.New("credential reference not bound to this backend and origin")

// CheckBinding checks backend b, about to be put into group by the admin
// API, against f, the fleet as its config file gives it: every header
// reference of b must be one the file holds for the backend of that name
// in that group (under any header), and b's URL must have the origin
// (scheme, host, port) of that backend's URL in the file. A reference is
// so sent only where the config file's author meant it to go; the admin
// API can neither point it at another origin nor introduce one. Likewise
// an auth section (whose tokens are the callers'): b may carry only the
// one the file holds for it, and only to its origin in the file. Errors are
// *FieldError naming "headers.<Name>" and the reference, matching
// ErrUnboundRef; none quotes a value.
func (f *Fleet) CheckBinding(group string, b Backend) error {
	fb, inFile := f.Backend(group, b.Name)
	if err := checkAuthBinding(group, b, fb, inFile); err != nil {
		return err
	}
	if len(b.Headers) == 0 {
		return nil
	}
	held := map[credential.Ref]bool{}
	for _, r := range fb.Headers {
		held[r] = true
	}
	for _, name := range b.Headers.Names() {
		r := b.Headers[name]
		fail := func(msg string) error {
			return &FieldError{Field: "headers." + name, Msg: fmt.Sprintf("credential reference %s %s (put backend %q into group %q)", r, msg, b.Name, group), Err: ErrUnboundRef}
		}
		if !inFile || !held[r] {
			return fail("is not one the config file holds for this backend; the admin API cannot introduce a reference")
		}
		want, err := credential.Origin(fb.URL)
		if err != nil {
			return fail("has no origin in the config file")
		}
		got, err := credential.Origin(b.URL)
		if err != nil {
			return &FieldError{Field: "url", Msg: err.Error()}
		}
		if got != want {
			return fail(fmt.Sprintf("is bound to the origin %s of this backend in the config file, not %s", want, got))
		}
	}
	return nil
}

// checkAuthBinding is CheckBinding's rule for b's auth section: none, or
// exactly the file's section for the backend (fb, when inFile), with b's
// URL at the origin of the file's.
func checkAuthBinding(group string, b, fb Backend, inFile bool) error {
	if b.Auth == nil {
		return nil
	}
	fail := func(msg string) error {
		return &FieldError{Field: "auth", Msg: fmt.Sprintf("%s (put backend %q into group %q)", msg, b.Name, group), Err: ErrUnboundRef}
	}
	if !inFile || !b.Auth.Equal(fb.Auth) {
		return fail("is not the auth section the config file holds for this backend; the admin API cannot introduce or change one")
	}
	want, err := credential.Origin(fb.URL)
	if err != nil {
		return fail("has no origin in the config file")
	}
	if got, err := credential.Origin(b.URL); err != nil || got != want {
		return fail(fmt.Sprintf("is bound to the origin %s of this backend in the config file", want))
	}
	return nil
}
