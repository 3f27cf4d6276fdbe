package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callBound bounds every client call; a call that takes longer than
// callBound plus hangSlack has hung.
const (
	callBound = 10 * time.Second
	hangSlack = 2 * time.Second
)

// client is one MCP session through one of the proxies.
type client struct {
	proto  string
	cs     *mcp.ClientSession
	closed bool
}

// connectAll opens n sessions, half 2025-11-25 and half 2026-07-28, spread
// over the proxies.
func connectAll(t *testing.T, ctx context.Context, proxies []*switchProxy, n int) []*client {
	t.Helper()
	out := make([]*client, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			p := proxies[i%len(proxies)]
			c := &client{proto: "2026-07-28"}
			var opts *mcp.ClientSessionOptions
			if (i/len(proxies))%2 == 0 {
				c.proto = "2025-11-25"
				opts = &mcp.ClientSessionOptions{ProtocolVersion: c.proto}
			}
			cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			cl := mcp.NewClient(&mcp.Implementation{Name: fmt.Sprintf("chaos-%d", i), Version: "1"}, nil)
			cs, err := cl.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: "http://" + p.addr() + "/mcp", MaxRetries: 3}, opts)
			if err != nil {
				errs <- fmt.Errorf("session %d (%s): %w", i, c.proto, err)
				return
			}
			c.cs = cs
			out[i] = c
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeClients(out) })
	return out
}

// tools lists the session's tools within callBound.
func (c *client) tools(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, callBound)
	defer cancel()
	var names []string
	for tool, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names, nil
}

// load is a few goroutines calling echo tools on random sessions; every
// call is bounded and its outcome counted.
type load struct {
	cancel           context.CancelFunc
	wg               sync.WaitGroup
	ok, errors, hung atomic.Int64
	slowestNS        atomic.Int64
}

type loadResult struct {
	ok, errors, hung int64
	slowest          time.Duration
}

func startLoad(ctx context.Context, clients []*client, workers int) *load {
	ctx, cancel := context.WithCancel(ctx)
	l := &load{cancel: cancel}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for ctx.Err() == nil {
				c := clients[r.IntN(len(clients))]
				tool := fmt.Sprintf("b%d_echo", r.IntN(3))
				cctx, ccancel := context.WithTimeout(ctx, callBound)
				t0 := time.Now()
				res, err := c.cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "x"}})
				d := time.Since(t0)
				ccancel()
				for {
					old := l.slowestNS.Load()
					if int64(d) <= old || l.slowestNS.CompareAndSwap(old, int64(d)) {
						break
					}
				}
				switch {
				case d > callBound+hangSlack:
					l.hung.Add(1)
				case err != nil || res.IsError:
					if ctx.Err() == nil {
						l.errors.Add(1)
					}
				default:
					l.ok.Add(1)
				}
				time.Sleep(20 * time.Millisecond) // pacing of the load, not an assertion
			}
		}()
	}
	return l
}

func (l *load) stop() { l.cancel(); l.wg.Wait() }

func (l *load) result() loadResult {
	return loadResult{ok: l.ok.Load(), errors: l.errors.Load(), hung: l.hung.Load(), slowest: time.Duration(l.slowestNS.Load())}
}
