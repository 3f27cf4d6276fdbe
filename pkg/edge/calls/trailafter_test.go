package calls

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
)

// TestTrailAfterResponse: the call trail entry of a call that answers its
// client before its Closings end (a call lane's) is queued only when they
// end, after the response, and is the entry Audit would have queued at
// the call's end: the latency stops when the call returned, not when the
// entry is queued, and a failure is recorded as one. A call without
// Closings records at once.
func TestTrailAfterResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, pool := memBackend(t)
		pl := newPlane(t, pool, memView(t, []json.RawMessage{raw(`{"name":"echo","inputSchema":{"type":"object"}}`)}, nil, nil))
		var mu sync.Mutex
		var recorded []calltrail.Entry
		pl.record = func(e calltrail.Entry) { mu.Lock(); recorded = append(recorded, e); mu.Unlock() }
		trail := func() []calltrail.Entry {
			mu.Lock()
			defer mu.Unlock()
			return append([]calltrail.Entry(nil), recorded...)
		}
		ctx := context.Background()

		pl.Run(ctx, Call{Name: "alpha_echo", Args: raw(`{"text":"now"}`), Ident: "bob"})
		if got := trail(); len(got) != 1 || got[0].Outcome != calltrail.OutcomeOK {
			t.Fatalf("a call without Closings: trail %+v, want its entry at once", got)
		}

		later := &backend.Closings{}
		start := time.Now()
		reply := pl.Run(ctx, Call{Name: "alpha_echo", Args: raw(`{"text":"hi"}`), Ident: "bob", Later: later})
		took := time.Since(start)
		if res := reply.Decoded(); res.IsError || text(res) != "echo: hi" {
			t.Fatalf("call: %+v", res)
		}
		failed := pl.Run(ctx, Call{Name: "beta_echo", Ident: "bob", Later: later})
		if !failed.Decoded().IsError {
			t.Fatalf("unknown tool: %+v", failed.Decoded())
		}
		if got := trail(); len(got) != 1 {
			t.Fatalf("%d entries before the Closings ended, want 1 (the first call's)", len(got))
		}
		time.Sleep(time.Minute) // the response is written, the client reads it, ...
		later.Close()
		got := trail()
		if len(got) != 3 {
			t.Fatalf("%d entries after the Closings ended, want 3", len(got))
		}
		if e := got[1]; e.Tool != "alpha_echo" || e.Outcome != calltrail.OutcomeOK || e.Latency > took || e.Time.Before(start) {
			t.Fatalf("the call's entry: %+v (the call took %v)", e, took)
		}
		if e := got[2]; e.Tool != "beta_echo" || e.Outcome != calltrail.OutcomeError || e.Latency >= time.Minute {
			t.Fatalf("the failed call's entry: %+v", e)
		}
		later.Close() // a second end records nothing again
		if n := len(trail()); n != 3 {
			t.Fatalf("%d entries after a second Close, want 3", n)
		}
	})
}
