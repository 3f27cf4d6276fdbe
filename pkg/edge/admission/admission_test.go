package admission

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestAdmit(t *testing.T) {
	g := New(&Options{IdentityHeader: "X-User", MaxSessions: 10, MaxSessionsPerIdentity: 2, MaxInitializeBytes: 100, MaxBodyBytes: 1000, MaxDepth: 5})
	call := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`)
	for _, tc := range []struct {
		name   string
		req    Request
		status int
		reason string
		err    error
		ident  string
	}{
		{"no identity, session protocol", Request{Method: "POST", Header: hdr("Mcp-Session-Id", "s"), Body: call}, 401, ReasonMissingIdentity, ErrUnauthenticated, ""},
		{"no identity, 2026-07-28", Request{Method: "POST", Header: hdr("Mcp-Protocol-Version", "2026-07-28"), Body: call}, 401, ReasonMissingIdentity, ErrUnauthenticated, ""},
		{"no identity, version not a date", Request{Method: "POST", Header: hdr("Mcp-Protocol-Version", "9"), Body: call}, 401, ReasonMissingIdentity, ErrUnauthenticated, ""},
		{"no identity, GET", Request{Method: "GET", Header: hdr("Mcp-Session-Id", "s")}, 401, ReasonMissingIdentity, ErrUnauthenticated, ""},
		{"identity header twice", Request{Method: "POST", Header: http.Header{"X-User": {"mallory", "alice"}, "Mcp-Session-Id": {"s"}}, Body: call}, 400, ReasonDuplicateIdentity, ErrBadRequest, ""},
		{"identity header twice, GET", Request{Method: "GET", Header: http.Header{"X-User": {"alice", "alice"}, "Mcp-Session-Id": {"s"}}}, 400, ReasonDuplicateIdentity, ErrBadRequest, ""},
		{"token user wins", Request{Method: "GET", Header: hdr("Mcp-Session-Id", "s"), TokenUserID: "iss|sub"}, 0, "", nil, "iss|sub"},
		{"version not a date", Request{Method: "POST", Header: hdr("X-User", "u", "Mcp-Protocol-Version", "9", "Mcp-Session-Id", "s"), Body: call}, 400, ReasonBadProtocolVersion, ErrBadRequest, "u"},
		{"version with letters", Request{Method: "POST", Header: hdr("X-User", "u", "Mcp-Protocol-Version", "2026-07-2x", "Mcp-Session-Id", "s"), Body: call}, 400, ReasonBadProtocolVersion, ErrBadRequest, "u"},
		{"plain call", Request{Method: "POST", Header: hdr("X-User", "u", "Mcp-Session-Id", "s"), Body: call}, 0, "", nil, "u"},
		{"deep body", Request{Method: "POST", Header: hdr("X-User", "u", "Mcp-Session-Id", "s"), Body: []byte(`[[[[[[1]]]]]]`)}, 400, ReasonBodyTooDeep, ErrBadRequest, "u"},
		{"unbalanced body", Request{Method: "POST", Header: hdr("X-User", "u", "Mcp-Session-Id", "s"), Body: []byte(`[[`)}, 400, ReasonMalformedBody, ErrBadRequest, "u"},
		{"large body", Request{Method: "POST", Header: hdr("X-User", "u", "Mcp-Session-Id", "s"), Body: bytes.Repeat([]byte(" "), 1001)}, 413, ReasonBodyTooLarge, ErrTooLarge, "u"},
		{"truncated body", Request{Method: "POST", Header: hdr("X-User", "u", "Mcp-Session-Id", "s"), Body: call, Truncated: true}, 413, ReasonBodyTooLarge, ErrTooLarge, "u"},
		{"large initialize", Request{Method: "POST", Header: hdr("X-User", "u"), Body: bytes.Repeat([]byte(" "), 101)}, 413, ReasonBodyTooLarge, ErrTooLarge, "u"},
		{"large listen", Request{Method: "POST", Header: hdr("X-User", "u", "Mcp-Protocol-Version", "2026-07-28"), Body: append([]byte(`"subscriptions/listen"`), bytes.Repeat([]byte(" "), 100)...)}, 413, ReasonBodyTooLarge, ErrTooLarge, "u"},
		{"initialize, edge full", Request{Method: "POST", Header: hdr("X-User", "u"), Body: []byte(`{}`), Sessions: 10}, 503, ReasonSessionLimit, ErrLimited, "u"},
		{"initialize, identity full", Request{Method: "POST", Header: hdr("X-User", "u"), Body: []byte(`{}`), Sessions: 3, IdentitySessions: 2}, 429, ReasonIdentitySessionCap, ErrLimited, "u"},
		{"initialize, room", Request{Method: "POST", Header: hdr("X-User", "u"), Body: []byte(`{}`), Sessions: 3, IdentitySessions: 1}, 0, "", nil, "u"},
		{"rebuild, edge full", Request{Method: "GET", Header: hdr("X-User", "u", "Mcp-Session-Id", "s"), Rebuild: true, Sessions: 10}, 503, ReasonSessionLimit, ErrLimited, "u"},
		{"call, edge full", Request{Method: "POST", Header: hdr("X-User", "u", "Mcp-Session-Id", "s"), Body: call, Sessions: 10, IdentitySessions: 5}, 0, "", nil, "u"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := g.Admit(&tc.req)
			if d.Identity != tc.ident {
				t.Errorf("identity %q, want %q", d.Identity, tc.ident)
			}
			if tc.status == 0 {
				if d.Refusal != nil {
					t.Fatalf("refused: %+v", d.Refusal)
				}
				return
			}
			if d.Refusal == nil {
				t.Fatal("admitted")
			}
			f := d.Refusal
			if f.Status != tc.status || f.Reason != tc.reason || !errors.Is(f.Err, tc.err) {
				t.Fatalf("refusal %d %s %v, want %d %s %v", f.Status, f.Reason, f.Err, tc.status, tc.reason, tc.err)
			}
			if (f.Status == 503 || f.Status == 429) != (f.RetryAfter > 0) {
				t.Fatalf("Retry-After %v with status %d", f.RetryAfter, f.Status)
			}
		})
	}
}

// A body over its limit is refused with a JSON-RPC error naming the
// limit and the flag that sets it.
func TestTooLargeNamesTheLimit(t *testing.T) {
	g := New(&Options{MaxInitializeBytes: 100, MaxBodyBytes: 1000})
	for _, tc := range []struct {
		header http.Header
		want   string
	}{
		{hdr("Mcp-Session-Id", "s"), `{"limit":1000,"flag":"--max-request-bytes"}`},
		{hdr(), `{"limit":100,"flag":"--max-initialize-bytes"}`},
	} {
		f := g.Admit(&Request{Method: "POST", Header: tc.header, Body: []byte(`{}`), Truncated: true}).Refusal
		if f == nil || f.Status != 413 || !f.RPC || f.Code != CodeTooLarge || string(f.Data) != tc.want ||
			!strings.Contains(f.Err.Error(), "limit of") {
			t.Fatalf("refusal %+v, want 413 with JSON-RPC data %s", f, tc.want)
		}
	}
}

func TestAnonymousHasNoIdentityCap(t *testing.T) {
	g := New(&Options{MaxSessionsPerIdentity: 1})
	if d := g.Admit(&Request{Method: "POST", Header: hdr(), Body: []byte(`{}`), Sessions: 5, IdentitySessions: 5}); d.Refusal != nil {
		t.Fatalf("anonymous session refused: %+v", d.Refusal)
	}
}

func TestVersions(t *testing.T) {
	for v, want := range map[string]bool{"2026-07-28": true, "2027-01-01": true, "2025-11-25": false, "9": false, "": false, "2026-07-28 ": false, "9999-99-99": true} {
		if got := NewProtocol(v); got != want {
			t.Errorf("NewProtocol(%q) = %v", v, got)
		}
	}
}

func TestLogLimiter(t *testing.T) {
	l := NewLogLimiter(time.Minute, 2)
	t0 := time.Unix(0, 0)
	if !l.Allow("a", t0) || l.Allow("a", t0.Add(time.Second)) || !l.Allow("a", t0.Add(time.Minute)) {
		t.Fatal("once a minute per key")
	}
	for i := range 100 {
		l.Allow(string(rune('b'+i)), t0)
	}
	if len(l.last) > 2 {
		t.Fatalf("%d keys kept, limit 2", len(l.last))
	}
}

// With Reserve, the caps are decided by the reserver's counts, under its
// lock: fits sees them and its answer is the gate's.
func TestAdmitReserves(t *testing.T) {
	g := New(&Options{IdentityHeader: "X-User", MaxSessions: 3, MaxSessionsPerIdentity: 2})
	held := map[string]int{}
	all := 0
	reserve := func(id string, fits func(all, mine int) bool) bool {
		if !fits(all, held[id]) {
			return false
		}
		all++
		held[id]++
		return true
	}
	for i, want := range []int{0, 0, 429, 0, 503} {
		user := "u"
		if i >= 3 {
			user = "v"
		}
		d := g.Admit(&Request{Method: "POST", Header: hdr("X-User", user), Body: []byte(`{}`), Reserve: reserve,
			Sessions: 0, Counts: func(string) (int, int) { return 0, 0 }})
		got := 0
		if d.Refusal != nil {
			got = d.Refusal.Status
		}
		if got != want {
			t.Fatalf("initialize %d of %s: %d, want %d (held %v)", i, user, got, want, held)
		}
	}
	if all != 3 {
		t.Fatalf("%d reserved, want 3 (the cap)", all)
	}
	if d := g.Admit(&Request{Method: "POST", Header: hdr("X-User", "w"), Body: []byte(`{}`),
		Reserve: func(string, func(int, int) bool) bool { return false }}); d.Refusal == nil || d.Refusal.Status != 503 {
		t.Fatalf("a reserver refusing without asking: %+v", d.Refusal)
	}
}
