package clientaddr

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	for _, c := range []struct {
		o   *Options
		nil bool
		err bool
	}{
		{nil, true, false},
		{&Options{}, true, false},
		{&Options{Trusted: " , "}, false, false},
		{&Options{Trusted: "10.0.0.0/8, 192.0.2.1, 2001:db8::/32"}, false, false},
		{&Options{Trusted: "10.0.0.0/8", Header: "forwarded"}, false, false},
		{&Options{Trusted: "10.0.0.0/8", Header: "X-Real-IP"}, false, true},
		{&Options{Trusted: "10.0.0.0/33"}, false, true},
		{&Options{Trusted: "proxy.internal"}, false, true},
		{&Options{Trusted: strings.Repeat("10.0.0.1,", MaxProxies+1)}, false, true},
	} {
		r, err := New(c.o)
		if (err != nil) != c.err || c.err && !errors.Is(err, ErrOptions) || !c.err && (r == nil) != c.nil {
			t.Errorf("New(%+v) = %v, %v", c.o, r, err)
		}
	}
}

func TestAddr(t *testing.T) {
	xff, err := New(&Options{Trusted: "10.0.0.0/8, 192.0.2.1, 2001:db8:ff::/48, ::ffff:172.16.0.0/108"})
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := New(&Options{Trusted: "10.0.0.0/8", Header: HeaderForwarded})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("10.1.1.1, ", MaxHeader/10) + "203.0.113.9"
	for _, c := range []struct {
		name   string
		r      *Resolver
		remote string
		header map[string][]string
		want   string
	}{
		{"no resolver: the peer", nil, "198.51.100.4:5000", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "198.51.100.4"},
		{"untrusted peer: its header ignored", xff, "198.51.100.4:5000", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "198.51.100.4"},
		{"trusted peer: the address it forwarded for", xff, "10.0.0.2:5000", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"a client's own entry left of the proxy's is not believed", xff, "10.0.0.2:5000", map[string][]string{"X-Forwarded-For": {"1.2.3.4, 203.0.113.9"}}, "203.0.113.9"},
		{"a chain of trusted proxies", xff, "10.0.0.2:5000", map[string][]string{"X-Forwarded-For": {"203.0.113.9, 192.0.2.1", "10.9.9.9"}}, "203.0.113.9"},
		{"trusted peer without header: the peer", xff, "10.0.0.2:5000", nil, "10.0.0.2"},
		{"an entry that does not parse ends at the last trusted hop", xff, "10.0.0.2:5000", map[string][]string{"X-Forwarded-For": {"evil, 10.3.3.3"}}, "10.3.3.3"},
		{"a port and brackets", xff, "10.0.0.2:5000", map[string][]string{"X-Forwarded-For": {"[2001:db8:1:2::7]:443"}}, "2001:db8:1:2::/64"},
		{"IPv6 trusted peer", xff, "[2001:db8:ff::1]:5000", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"an IPv4-mapped prefix trusts the IPv4 peer", xff, "172.16.0.3:1", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "203.0.113.9"},
		{"Forwarded is not read when X-Forwarded-For is the header", xff, "10.0.0.2:5000", map[string][]string{"Forwarded": {"for=203.0.113.9"}}, "10.0.0.2"},
		{"Forwarded", fwd, "10.0.0.2:5000", map[string][]string{"Forwarded": {`for=1.2.3.4, for="[2001:db8:1:2::7]:4711";proto=https`}}, "2001:db8:1:2::/64"},
		{"Forwarded: a quoted comma", fwd, "10.0.0.2:5000", map[string][]string{"Forwarded": {`for=1.2.3.4;by="a,b", For=203.0.113.9;by=10.0.0.2`}}, "203.0.113.9"},
		{"Forwarded: unknown", fwd, "10.0.0.2:5000", map[string][]string{"Forwarded": {"for=unknown"}}, "10.0.0.2"},
		{"Forwarded: obfuscated", fwd, "10.0.0.2:5000", map[string][]string{"Forwarded": {"for=_hidden"}}, "10.0.0.2"},
		{"X-Forwarded-For is not read when Forwarded is the header", fwd, "10.0.0.2:5000", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "10.0.0.2"},
		{"a long header: only its end is read", xff, "10.0.0.2:5000", map[string][]string{"X-Forwarded-For": {long}}, "203.0.113.9"},
		{"too many trusted hops: the last trusted one read", xff, "10.0.0.2:5000", map[string][]string{"X-Forwarded-For": {"203.0.113.9, " + strings.Repeat("10.1.1.1, ", MaxHops) + "10.2.2.2"}}, "10.1.1.1"},
		{"a peer that does not parse", xff, "pipe", map[string][]string{"X-Forwarded-For": {"203.0.113.9"}}, "pipe"},
	} {
		req := &http.Request{RemoteAddr: c.remote, Header: http.Header(c.header)}
		if got := c.r.Addr(req); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// FuzzWalk: any header, for any peer, yields an address within the
// bounds, without panicking.
func FuzzWalk(f *testing.F) {
	f.Add("203.0.113.9, 10.0.0.3", false)
	f.Add(`for=1.2.3.4;by="a,b", For="[2001:db8::7]:4711"`, true)
	f.Add(`for="\"", ,,`, true)
	f.Fuzz(func(t *testing.T, h string, forwarded bool) {
		r := &Resolver{trusted: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}, forwarded: forwarded}
		got := r.Walk(netip.MustParseAddr("10.0.0.1"), []string{h})
		if !got.IsValid() {
			t.Fatalf("walk of %q: invalid address", h)
		}
	})
}
