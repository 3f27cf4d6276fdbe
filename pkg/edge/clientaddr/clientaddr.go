package clientaddr

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/ratelimit"
)

// Headers a trusted proxy may forward the client's address in.
const (
	HeaderXForwardedFor = "X-Forwarded-For"
	HeaderForwarded     = "Forwarded"
)

// Bounds of the walk through a forwarding header.
const (
	// MaxHeader is how many bytes of the header's end are read.
	MaxHeader = 8 << 10
	// MaxHops is how many entries are read, from the right.
	MaxHops = 64
	// MaxProxies bounds the trusted list.
	MaxProxies = 256
)

// ErrOptions: the trusted proxies or the header cannot be used.
var ErrOptions = errors.New("clientaddr: options")

// Options configure a Resolver.
type Options struct {
	// Trusted are the proxies whose forwarding header is believed:
	// comma-separated CIDR prefixes or addresses. Empty: none (every
	// request is its peer's).
	Trusted string
	// Header is the forwarding header they set: HeaderXForwardedFor (the
	// default) or HeaderForwarded. Only that one is read: a client could
	// send the other through a proxy that does not touch it.
	Header string
}

// Resolver tells a request's client address. A nil *Resolver takes the
// connection's peer.
type Resolver struct {
	trusted   []netip.Prefix
	forwarded bool // HeaderForwarded
}

// New returns the Resolver of o; nil, nil when o trusts no proxy.
func New(o *Options) (*Resolver, error) {
	if o == nil || strings.TrimSpace(o.Trusted) == "" {
		return nil, nil
	}
	r := &Resolver{}
	switch http.CanonicalHeaderKey(o.Header) {
	case "", HeaderXForwardedFor:
	case HeaderForwarded:
		r.forwarded = true
	default:
		return nil, fmt.Errorf("%w: header %q: want %s or %s", ErrOptions, o.Header, HeaderXForwardedFor, HeaderForwarded)
	}
	for _, s := range strings.Split(o.Trusted, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		p, err := parsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%w: trusted proxy %q: %w", ErrOptions, s, err)
		}
		if len(r.trusted) == MaxProxies {
			return nil, fmt.Errorf("%w: more than %d trusted proxies", ErrOptions, MaxProxies)
		}
		r.trusted = append(r.trusted, p)
	}
	return r, nil
}

// parsePrefix reads a CIDR prefix or a single address.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	a = a.Unmap().WithZone("")
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// trusts reports whether a is a trusted proxy.
func (r *Resolver) trusts(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Addr is the key of req's client address (ratelimit.ClientAddr's form:
// an IPv4 address, or an IPv6 /64).
func (r *Resolver) Addr(req *http.Request) string {
	if r == nil {
		return ratelimit.ClientAddr(req.RemoteAddr)
	}
	peer, ok := parseNode(req.RemoteAddr)
	if !ok || !r.trusts(peer) {
		return ratelimit.ClientAddr(req.RemoteAddr)
	}
	name := HeaderXForwardedFor
	if r.forwarded {
		name = HeaderForwarded
	}
	return ratelimit.ClientAddr(r.Walk(peer, req.Header.Values(name)).String())
}

// Walk is the client's address given the peer, a trusted proxy, and the
// values of the forwarding header, in order: the first address from the
// right that is not a trusted proxy, or the last trusted one when an
// entry does not parse, the bounds are reached or the entries end.
func (r *Resolver) Walk(peer netip.Addr, values []string) netip.Addr {
	h := strings.Join(values, ",")
	if len(h) > MaxHeader {
		h = h[len(h)-MaxHeader:]
		if i := strings.IndexByte(h, ','); i >= 0 {
			h = h[i+1:] // the cut entry is not read
		} else {
			h = ""
		}
	}
	cur := peer.Unmap().WithZone("")
	for hops := 0; hops < MaxHops && r.trusts(cur); hops++ {
		var entry string
		var ok bool
		if h, entry, ok = lastEntry(h); !ok {
			return cur
		}
		var next netip.Addr
		if r.forwarded {
			next, ok = forwardedFor(entry)
		} else {
			next, ok = parseNode(strings.TrimSpace(entry))
		}
		if !ok {
			return cur
		}
		cur = next.Unmap().WithZone("")
	}
	return cur
}

// lastEntry splits h at its last comma outside a quoted string: what
// precedes, the last entry, and false when h holds none.
func lastEntry(h string) (rest, entry string, ok bool) {
	if strings.TrimSpace(h) == "" {
		return "", "", false
	}
	quoted := false
	for i := len(h) - 1; i >= 0; i-- {
		switch h[i] {
		case '"':
			if i == 0 || h[i-1] != '\\' {
				quoted = !quoted
			}
		case ',':
			if !quoted {
				return h[:i], h[i+1:], true
			}
		}
	}
	return "", h, true
}

// forwardedFor is the address of the for= parameter of one Forwarded
// element ("for=192.0.2.60;proto=http", `for="[2001:db8::17]:4711"`);
// false for none, "unknown", an obfuscated identifier or anything else.
func forwardedFor(elem string) (netip.Addr, bool) {
	for _, pair := range strings.Split(elem, ";") {
		k, v, found := strings.Cut(strings.TrimSpace(pair), "=")
		if !found || !strings.EqualFold(strings.TrimSpace(k), "for") {
			continue
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			v = v[1 : len(v)-1]
		}
		return parseNode(v)
	}
	return netip.Addr{}, false
}

// parseNode reads an address, with or without a port, IPv6 bracketed or
// not: "192.0.2.7", "192.0.2.7:443", "2001:db8::1", "[2001:db8::1]:443".
func parseNode(s string) (netip.Addr, bool) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr(), true
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	return a, err == nil
}
