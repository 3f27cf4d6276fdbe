package backendnet

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"syscall"
	"testing"
)

func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		addr string
		want bool
	}{
		{"169.254.169.254", true}, {"169.254.0.1", true}, {"169.254.255.255", true}, {"169.253.255.255", false},
		{"169.255.0.0", false}, {"fe80::1", true}, {"fe80::1%eth0", true}, {"febf::1", true}, {"fec0::1", false},
		{"::ffff:169.254.169.254", true}, {"64:ff9b::a9fe:a9fe", true}, {"fd00:ec2::254", true}, {"fd00:ec2::253", false},
		{"100.100.100.200", true}, {"192.0.0.192", true}, {"127.0.0.1", false}, {"10.0.0.1", false}, {"::1", false},
		{"8.8.8.8", false}, {"ff02::1", true},
	} {
		if got := Refused(netip.MustParseAddr(tc.addr)); got != tc.want {
			t.Errorf("Refused(%s) = %v, want %v", tc.addr, got, tc.want)
		}
	}
}

func TestCheckURL(t *testing.T) {
	for _, tc := range []struct {
		url   string
		allow bool
		err   error
	}{
		{"http://127.0.0.1:9101/mcp", false, nil},
		{"https://alpha.internal/mcp", false, nil},
		{"http://169.254.169.254/latest", false, ErrLinkLocal},
		{"http://169.254.169.254/latest", true, nil},
		{"http://[fe80::1%25eth0]:80/", false, ErrLinkLocal},
		{"http://[fd00:ec2::254]/", false, ErrLinkLocal},
		{"http://metadata.google.internal/computeMetadata/v1/", false, ErrLinkLocal},
		{"http://METADATA.Google.Internal./", false, ErrLinkLocal},
		{"http://metadata/", false, ErrLinkLocal},
		{"http://100.100.100.200/", false, ErrLinkLocal},
		{"http://[::ffff:169.254.169.254]/", false, ErrLinkLocal},
		{"http://user:pw@host/", false, ErrUserInfo},
		{"http://user:pw@host/", true, ErrUserInfo},
		{"http://user@host/", false, ErrUserInfo},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckURL(u, tc.allow); !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("CheckURL(%s, %v) = %v, want %v", tc.url, tc.allow, err, tc.err)
		}
	}
}

// TestDialRefused: the guarded dialer refuses a link-local address before
// connecting, unless the context or the dialer allows it.
func TestDialRefused(t *testing.T) {
	ctx := context.Background()
	if _, err := Dialer(false).DialContext(ctx, "tcp", "169.254.169.254:80"); !errors.Is(err, ErrLinkLocal) {
		t.Fatalf("dial metadata: %v", err)
	}
	if _, err := Dialer(false).DialContext(ctx, "tcp", "[fe80::1]:80"); !errors.Is(err, ErrLinkLocal) {
		t.Fatalf("dial fe80::1: %v", err)
	}
	// Allowed by the context: Control lets it through (not dialed here:
	// no test connects to a link-local address).
	if err := Control(WithAllowLinkLocal(ctx, true), "tcp", "169.254.169.254:80", nil); err != nil {
		t.Fatalf("allowed: %v", err)
	}
	if err := Control(WithAllowLinkLocal(ctx, false), "tcp", "169.254.169.254:80", nil); !errors.Is(err, ErrLinkLocal) {
		t.Fatalf("not allowed: %v", err)
	}
	if d := Dialer(true); d.ControlContext != nil || d.Control != nil {
		t.Fatal("Dialer(true) checks addresses")
	}
	// Loopback is fine.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := Dialer(false).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// TestDialResolvedName: a name whose DNS answer is a link-local address is
// refused at dial time (a DNS server on loopback answers every A query
// with 169.254.7.7).
func TestDialResolvedName(t *testing.T) {
	dns := fakeDNS(t, [4]byte{169, 254, 7, 7})
	d := Dialer(false)
	d.Resolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", dns)
	}}
	_, err := d.DialContext(context.Background(), "tcp4", "innocent.example:80")
	if !errors.Is(err, ErrLinkLocal) {
		t.Fatalf("dial of a name resolving to 169.254.7.7: %v", err)
	}
	// Through an http.Transport, and the request context's mark.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp4", addr) }
	_, err = (&http.Client{Transport: tr}).Get("http://innocent.example/")
	if !errors.Is(err, ErrLinkLocal) {
		t.Fatalf("GET through the guarded transport: %v", err)
	}
	// Scoped as allowed, the check passes (and the test transport stops
	// before connecting).
	var seen string
	tr.DialContext = func(ctx context.Context, _, addr string) (net.Conn, error) {
		d2 := *d
		d2.ControlContext = func(ctx context.Context, network, address string, c syscall.RawConn) error {
			if err := Control(ctx, network, address, c); err != nil {
				return err
			}
			seen = address
			return errors.New("test: not connecting")
		}
		return d2.DialContext(ctx, "tcp4", addr)
	}
	req, _ := http.NewRequest("GET", "http://innocent.example/", nil)
	if _, err := Scope(tr, true).RoundTrip(req); errors.Is(err, ErrLinkLocal) || seen != "169.254.7.7:80" {
		t.Fatalf("scoped as allowed: %v (address %q)", err, seen)
	}
}

// TestTransport: Transport(false) reaches loopback and refuses link-local.
func TestTransport(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	c := &http.Client{Transport: Transport(false)}
	resp, err := c.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := c.Get("http://169.254.169.254/latest/meta-data/"); !errors.Is(err, ErrLinkLocal) {
		t.Fatalf("metadata GET: %v", err)
	}
	g := http.DefaultTransport.(*http.Transport).Clone()
	Guard(g)
	if _, err := (&http.Client{Transport: g}).Get("http://169.254.169.254/"); !errors.Is(err, ErrLinkLocal) {
		t.Fatalf("guarded GET: %v", err)
	}
}

// fakeDNS serves A answers with ip on a loopback UDP port (AAAA: none).
func fakeDNS(t *testing.T, ip [4]byte) string {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			if len(q) < 12 {
				continue
			}
			// The question: labels, then type and class.
			i := 12
			for i < len(q) && q[i] != 0 {
				i += int(q[i]) + 1
			}
			if i+5 > len(q) {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[i+1:])
			question := q[12 : i+5]
			resp := append([]byte{q[0], q[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0}, question...)
			if qtype == 1 {
				resp[7] = 1
				resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ip[0], ip[1], ip[2], ip[3])
			}
			_, _ = pc.WriteTo(resp, from)
		}
	}()
	return pc.LocalAddr().String()
}
