package backendnet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// allowKey is the context key of a dial allowed to reach link-local
// addresses.
type allowKey struct{}

// WithAllowLinkLocal returns ctx marked so that a guarded dial under it
// (Dialer(false), Control) may reach link-local and metadata addresses
// when allow is true. The mark survives net/http's dial, which keeps the
// request context's values.
func WithAllowLinkLocal(ctx context.Context, allow bool) context.Context {
	if !allow {
		return ctx
	}
	return context.WithValue(ctx, allowKey{}, true)
}

func allowed(ctx context.Context) bool {
	v, _ := ctx.Value(allowKey{}).(bool)
	return v
}

// Control is a net.Dialer ControlContext that refuses a connection to a
// link-local or metadata IP address (Refused), after name resolution,
// unless ctx was marked by WithAllowLinkLocal. The error matches
// ErrLinkLocal.
func Control(ctx context.Context, network, address string, _ syscall.RawConn) error {
	if allowed(ctx) {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("dial %s %s: unparsable address refused", network, address)
	}
	if Refused(ap.Addr()) {
		return fmt.Errorf("dial %s %s: %w", network, address, ErrLinkLocal)
	}
	return nil
}

// Dialer returns a dialer for backends (timeouts of net/http's default
// transport). Unless allowLinkLocal, it refuses every connection to a
// link-local or metadata address that a context marked by
// WithAllowLinkLocal does not allow; DNS answers are checked too, as the
// check runs on the address dialed.
func Dialer(allowLinkLocal bool) *net.Dialer {
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if !allowLinkLocal {
		d.ControlContext = Control
	}
	return d
}

// Transport returns a clone of http.DefaultTransport that dials through
// Dialer(allowLinkLocal). A proxy from the environment is still used:
// then the dialer checks the proxy's address, and the proxy reaches the
// backend.
func Transport(allowLinkLocal bool) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = Dialer(allowLinkLocal).DialContext
	return t
}

// Guard makes t dial through Dialer(false), so that only requests marked
// by Scope(..., true) reach link-local addresses.
func Guard(t *http.Transport) { t.DialContext = Dialer(false).DialContext }

// Scope returns next with every request's context marked by
// WithAllowLinkLocal(allowLinkLocal): the transport of one backend, over a
// transport shared by many whose dialer is guarded.
func Scope(next http.RoundTripper, allowLinkLocal bool) http.RoundTripper {
	if !allowLinkLocal {
		return next
	}
	return &scoped{next: next}
}

type scoped struct{ next http.RoundTripper }

func (s *scoped) RoundTrip(req *http.Request) (*http.Response, error) {
	return s.next.RoundTrip(req.WithContext(WithAllowLinkLocal(req.Context(), true)))
}

// CloseIdleConnections passes on to the next transport.
func (s *scoped) CloseIdleConnections() {
	if c, ok := s.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
