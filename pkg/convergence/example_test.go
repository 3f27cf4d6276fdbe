package convergence_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/convergence"
)

// digest stands in for catalog.Digest: any deterministic function of the
// tools works for the example.
func digest(tools []json.RawMessage) (string, error) {
	h := sha256.New()
	for _, t := range tools {
		h.Write(t)
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func Example() {
	echo := json.RawMessage(`{"name":"alpha__echo","inputSchema":{"type":"object"}}`)
	sum := json.RawMessage(`{"name":"alpha__sum","inputSchema":{"type":"object"}}`)
	fetch := json.RawMessage(`{"name":"beta__fetch","inputSchema":{"type":"object"}}`)
	cur := func(tools ...json.RawMessage) string { d, _ := digest(tools); return d }
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

	// After initialize: both sides negotiated tools listChanged.
	rec := convergence.Record{ProtocolVersion: "2025-11-25", ClientListChanged: true, ServerListChanged: true}
	rec.SetCurrent(cur(echo, sum), 1)

	// The client lists tools over two pages.
	_ = rec.ListPage(t0, "", []json.RawMessage{echo}, "p2", digest)
	fmt.Println(convergence.Explain(rec))
	_ = rec.ListPage(t0.Add(time.Second), "p2", []json.RawMessage{sum}, "", digest)
	fmt.Println(convergence.Verdict(rec))

	// A backend adds a tool; the edge tells the client.
	rec.SetCurrent(cur(echo, sum, fetch), 2)
	rec.Signal(t0.Add(time.Minute), 2)
	fmt.Println(convergence.Explain(rec))

	// The client lists again, in one page.
	_ = rec.ListPage(t0.Add(time.Minute+250*time.Millisecond), "", []json.RawMessage{echo, sum, fetch}, "", digest)
	d, _ := convergence.SignalToConverged(rec)
	fmt.Println(convergence.Verdict(rec), convergence.GenerationLag(rec), d)

	// Output:
	// incomplete traversal in progress: 1 page(s) served, nextCursor "p2" outstanding
	// converged
	// stale no traversal since the change signal for generation 2
	// converged 0 250ms
}
