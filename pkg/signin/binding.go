package signin

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A sign-in is bound to the browser of the user it was begun for (the MCP
// specification's URL-mode elicitation guidance: the server checks that
// the user who completes the flow is the one the elicitation was made
// for). The URL a caller is given is the edge's StartPath; there the
// browser signs in at the fleet's own issuer (the one whose access tokens
// the edge verifies) and its user (iss and sub) must be the caller the
// state names. The browser then holds a Binding cookie naming that
// identity and that sign-in, which the backend's callback requires.
//
// Two values are sealed here, each under its own label:
//   - the Binding (the cookie): before the fleet login it names the
//     sign-in and a nonce only (the login leg is bound to the browser
//     that began it); after, the verified identity as well.
//   - the login state: the state parameter of the fleet login, carrying
//     the backend sign-in's state, the login's PKCE verifier and the
//     nonce of the browser's cookie.

// Bounds of the browser binding.
const (
	// MaxCookie is the longest cookie value OpenBinding takes.
	MaxCookie = 2 << 10
	// MaxLoginState is the longest login state OpenLogin takes (it
	// carries a backend state).
	MaxLoginState = 2*MaxState + 512
	bindingPrefix = "fb1."
	loginPrefix   = "fl1."
	labelBinding  = "fleetgate sign-in browser binding v1\x00"
	labelLogin    = "fleetgate sign-in login state v1\x00"
)

// Errors of the browser binding; none quotes a value.
var (
	// ErrNoBinding: the browser holds no binding of this sign-in (it did
	// not begin it, or began another since).
	ErrNoBinding = errors.New("this browser did not begin this sign-in (open the sign-in link you were given, in one browser)")
	// ErrOtherUser: the browser's user is not the caller the sign-in was
	// begun for.
	ErrOtherUser = errors.New("the user signed in to this browser is not the user this sign-in was begun for")
)

// Cookies is how the browser's request gives the binding cookie of
// sign-in bind ("" for none): a browser holds one per sign-in it began.
type Cookies func(bind string) string

// Cookie is the Cookies of a request that holds one binding cookie, c.
func Cookie(c string) Cookies { return func(string) string { return c } }

// Binding is the browser's cookie: the sign-in it began (Pending.Bind),
// the nonce its fleet login carries, and, once the fleet login verified
// it, the identity.
type Binding struct {
	Identity string `json:"i,omitempty"`
	Bind     string `json:"b"`
	Nonce    string `json:"n,omitempty"`
	Expires  int64  `json:"e"`
}

// LoginState is the state of the fleet login of a sign-in.
type LoginState struct {
	State    string `json:"s"` // the backend sign-in's sealed state
	Verifier string `json:"v"` // the fleet login's PKCE verifier
	Nonce    string `json:"n"` // the Binding's nonce
	Expires  int64  `json:"e"`
}

// newID is 128 random bits, URL-safe.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// SealBinding is the cookie value carrying b.
func (k *Key) SealBinding(b Binding) (string, error) {
	return k.sealText(bindingPrefix, labelBinding, b)
}

// OpenBinding returns the Binding sealed in v by a Key of the same secret,
// when not expired at now.
func (k *Key) OpenBinding(v string, now time.Time) (Binding, error) {
	var b Binding
	if err := k.openText(v, MaxCookie, bindingPrefix, labelBinding, &b); err != nil {
		return Binding{}, fmt.Errorf("open browser binding: %w", err)
	}
	if b.Bind == "" || (b.Identity == "" && b.Nonce == "") {
		return Binding{}, fmt.Errorf("open browser binding: %w", ErrMalformed)
	}
	if now.Unix() > b.Expires {
		return Binding{}, fmt.Errorf("open browser binding: %w", ErrExpired)
	}
	return b, nil
}

// SealLogin is the state parameter of a fleet login carrying l.
func (k *Key) SealLogin(l LoginState) (string, error) { return k.sealText(loginPrefix, labelLogin, l) }

// OpenLogin returns the LoginState sealed in v by a Key of the same
// secret, when not expired at now.
func (k *Key) OpenLogin(v string, now time.Time) (LoginState, error) {
	var l LoginState
	if err := k.openText(v, MaxLoginState, loginPrefix, labelLogin, &l); err != nil {
		return LoginState{}, fmt.Errorf("open login state: %w", err)
	}
	if l.State == "" || l.Verifier == "" || l.Nonce == "" {
		return LoginState{}, fmt.Errorf("open login state: %w", ErrMalformed)
	}
	if now.Unix() > l.Expires {
		return LoginState{}, fmt.Errorf("open login state: %w", ErrExpired)
	}
	return l, nil
}

func (k *Key) sealText(prefix, label string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	return prefix + base64.RawURLEncoding.EncodeToString(seal(k.state, plain, aad(label))), nil
}

// openText opens a value sealText made with prefix and label, of at most
// limit bytes, into v.
func (k *Key) openText(s string, limit int, prefix, label string, v any) error {
	if len(s) > limit {
		return fmt.Errorf("%d bytes: %w", len(s), ErrMalformed)
	}
	enc, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return ErrMalformed
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return ErrMalformed
	}
	plain, err := open(k.state, raw, aad(label))
	if err != nil {
		return err
	}
	if json.Unmarshal(plain, v) != nil {
		return ErrMalformed
	}
	return nil
}

// CheckBinding is nil when the browser's binding b (opened) is the
// completed binding of the sign-in p: the identity p was begun for, and
// p itself.
func CheckBinding(b Binding, p Pending) error {
	switch {
	case b.Bind != p.Bind || b.Identity == "":
		return ErrNoBinding
	case b.Identity != p.Identity:
		return ErrOtherUser
	}
	return nil
}
