package backendnet

import (
	"errors"
	"net/netip"
	"net/url"
	"testing"
)

// FuzzCheckURL: never panics; every refusal matches a sentinel; an address
// that Refused names is refused in every spelling url.Parse accepts.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"http://169.254.169.254/", "http://[fe80::1%25en0]/", "http://metadata./", "http://u:p@h/",
		"http://[::ffff:a9fe:a9fe]/", "http://0251.0376.0251.0376/", "http://2852039166/", "http://h:1/p"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := url.Parse(raw)
		if err != nil {
			return
		}
		err = CheckURL(u, false)
		if err != nil && !errors.Is(err, ErrLinkLocal) && !errors.Is(err, ErrUserInfo) {
			t.Fatalf("CheckURL(%q): %v", raw, err)
		}
		if a, perr := netip.ParseAddr(u.Hostname()); perr == nil && Refused(a) && u.User == nil && !errors.Is(err, ErrLinkLocal) {
			t.Fatalf("CheckURL(%q) accepts refused address %s", raw, a)
		}
		if err := CheckURL(u, true); err != nil && !errors.Is(err, ErrUserInfo) {
			t.Fatalf("allowed CheckURL(%q): %v", raw, err)
		}
	})
}
