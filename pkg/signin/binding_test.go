package signin

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A binding and a login state open under the key that sealed them, until
// they expire; altered, of another key, of the other kind, oversized or
// incomplete ones are refused. CheckBinding takes only the completed
// binding of the same sign-in and identity.
func TestBinding(t *testing.T) {
	k, _ := NewKey([]byte(strings.Repeat("k", 32)))
	other, _ := NewKey([]byte(strings.Repeat("o", 32)))
	now := time.Unix(1_000_000, 0)
	exp := now.Add(time.Minute).Unix()
	b := Binding{Identity: "https://idp alice", Bind: "s1", Expires: exp}
	cookie, err := k.SealBinding(b)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.OpenBinding(cookie, now); err != nil || got != b {
		t.Fatalf("open: %+v %v", got, err)
	}
	login, _ := k.SealLogin(LoginState{State: "fs1.x", Verifier: "v", Nonce: "n", Expires: exp})
	if l, err := k.OpenLogin(login, now); err != nil || l.State != "fs1.x" || l.Nonce != "n" {
		t.Fatalf("open login: %+v %v", l, err)
	}
	seal := func(b Binding) string { s, _ := k.SealBinding(b); return s }
	for name, c := range map[string]struct {
		v    string
		want error
	}{
		"expired":       {cookie, ErrExpired},
		"altered":       {cookie[:len(cookie)-2] + "AA", ErrRefused},
		"another key":   {func() string { s, _ := other.SealBinding(b); return s }(), ErrRefused},
		"a login state": {bindingPrefix + strings.TrimPrefix(login, loginPrefix), ErrRefused},
		"oversized":     {strings.Repeat("a", MaxCookie+1), ErrMalformed},
		"no prefix":     {"x" + cookie, ErrMalformed},
		"not base64":    {bindingPrefix + "!!", ErrMalformed},
		"no sign-in":    {seal(Binding{Identity: "i", Expires: exp}), ErrMalformed},
		"nothing bound": {seal(Binding{Bind: "s1", Expires: exp}), ErrMalformed},
	} {
		at := now
		if name == "expired" {
			at = now.Add(2 * time.Minute)
		}
		if _, err := k.OpenBinding(c.v, at); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	if _, err := k.OpenLogin(cookie, now); !errors.Is(err, ErrMalformed) {
		t.Errorf("a cookie as a login state: %v", err)
	}
	resume, _ := k.SealResume(Resume{Identity: "https://idp alice", Backend: "docs", Elicitation: "x", Expires: exp})
	if r, err := k.OpenResume(resume, now); err != nil || r.Backend != "docs" {
		t.Errorf("open resume: %+v %v", r, err)
	}
	if _, err := k.OpenResume(resume, now.Add(time.Hour)); !errors.Is(err, ErrExpired) {
		t.Errorf("an expired resume state: %v", err)
	}
	if _, err := k.OpenResume(bindingPrefix+strings.TrimPrefix(resume, resumePrefix), now); !errors.Is(err, ErrMalformed) {
		t.Errorf("a resume state as a cookie: %v", err)
	}
	p := Pending{Identity: "https://idp alice", Bind: "s1"}
	for _, c := range []struct {
		b    Binding
		want error
	}{
		{b, nil},
		{Binding{Identity: "https://idp bob", Bind: "s1"}, ErrOtherUser},
		{Binding{Identity: "https://idp alice", Bind: "s2"}, ErrNoBinding},
		{Binding{Bind: "s1", Nonce: "n"}, ErrNoBinding}, // the fleet login's alone
	} {
		if err := CheckBinding(c.b, p); !errors.Is(err, c.want) {
			t.Errorf("CheckBinding(%+v) = %v, want %v", c.b, err, c.want)
		}
	}
}

func FuzzOpenBinding(f *testing.F) {
	// The only values sealed under k (the seal's nonce differs in each
	// fuzz worker: what opens is compared by content).
	k, _ := NewKey([]byte(strings.Repeat("k", 32)))
	sb := Binding{Identity: "i s", Bind: "b", Expires: 1 << 40}
	sl := LoginState{State: "fs1.x", Verifier: "v", Nonce: "n", Expires: 1 << 40}
	sr := Resume{Identity: "i s", Backend: "b", Elicitation: "x", Expires: 1 << 40}
	s, _ := k.SealBinding(sb)
	l, _ := k.SealLogin(sl)
	r, _ := k.SealResume(sr)
	f.Add(s)
	f.Add(l)
	f.Add(r)
	f.Add("fb1.AAAA")
	f.Fuzz(func(t *testing.T, v string) {
		if b, err := k.OpenBinding(v, time.Unix(0, 0)); err == nil && b != sb {
			t.Fatal("opened a binding it did not seal")
		}
		if ls, err := k.OpenLogin(v, time.Unix(0, 0)); err == nil && ls != sl {
			t.Fatal("opened a login state it did not seal")
		}
		if r, err := k.OpenResume(v, time.Unix(0, 0)); err == nil && r != sr {
			t.Fatal("opened a resume state it did not seal")
		}
	})
}

// A record that would seal to more than MaxRecord bytes is refused when
// sealed (no edge would open it); one just under seals and opens.
func TestSealRecordBounded(t *testing.T) {
	k, _ := NewKey([]byte(strings.Repeat("k", 32)))
	r := Record{Identity: "iss alice", Backend: "b", Refresh: strings.Repeat("r", MaxRecord)}
	if _, err := k.SealRecord(r); !errors.Is(err, ErrMalformed) {
		t.Fatalf("oversized record sealed: %v", err)
	}
	r.Refresh = strings.Repeat("r", MaxRecord/2)
	sealed, err := k.SealRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := k.OpenRecord(KeyOf(r.Identity, r.Backend), sealed); err != nil || got.Refresh != r.Refresh {
		t.Fatalf("open: %v", err)
	}
}
