package backend

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// A stdio backend (transport stdio) is a process this edge runs itself,
// an entry of its own allow-list (package stdio): its pooled session is
// its instance's one MCP session. Prune starts the instance of every stdio
// backend served and stops the others; a call while the instance is down
// gets an error naming the backend (and kicks a restart); CloseAll stops
// every process and waits for it. An edge whose allow-list lacks the
// entry serves no call of it and says why (StdioStatus, the log).

// stdioSet is the pool's stdio instances, by backend.
type stdioSet struct {
	host *stdio.Host
	mu   sync.Mutex
	runs map[string]*stdioRun
	wg   sync.WaitGroup
}

type stdioRun struct {
	inst   *stdio.Instance
	cfg    events.BackendConfig
	cancel context.CancelFunc
	err    error // the instance could not be made (not allowed here)
}

// SetStdio gives the pool this edge's stdio host (its allow-list); set
// before the first Prune. Without it every stdio backend is refused.
func (p *Pool) SetStdio(h *stdio.Host) {
	p.stdio = &stdioSet{host: h, runs: map[string]*stdioRun{}}
}

func isStdio(cfg events.BackendConfig) bool { return cfg.Transport == events.TransportStdio }

// ensure starts the instance of backend name as cfg when it is not
// running as cfg, and returns it.
func (s *stdioSet) ensure(ctx context.Context, name string, cfg events.BackendConfig) *stdioRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.runs[name]; r != nil && r.cfg.Equal(cfg) {
		return r
	} else if r != nil {
		r.cancel()
	}
	r := &stdioRun{cfg: cfg, cancel: func() {}}
	s.runs[name] = r
	if s.host == nil {
		r.err = fmt.Errorf("stdio backend %q: command %q: %w (this edge has no --stdio-commands)", name, cfg.Command, stdio.ErrNotAllowed)
		return r
	}
	r.inst, r.err = s.host.Instance(stdio.Spec{Backend: name, Command: cfg.Command, Args: slices.Clone(cfg.Args), Env: cfg.Env}, nil)
	if r.err != nil {
		return r
	}
	rctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	inst := r.inst
	s.wg.Go(func() { _ = inst.Run(rctx) })
	return r
}

// prune stops the instances of backends not in cfgs as stdio backends.
func (s *stdioSet) prune(ctx context.Context, cfgs map[string]events.BackendConfig) {
	for name, cfg := range cfgs {
		if isStdio(cfg) {
			s.ensure(ctx, name, cfg)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, r := range s.runs {
		if cfg, ok := cfgs[name]; !ok || !r.cfg.Equal(cfg) {
			r.cancel()
			delete(s.runs, name)
		}
	}
}

// closeAll stops every instance and waits for its process.
func (s *stdioSet) closeAll() {
	s.mu.Lock()
	for name, r := range s.runs {
		r.cancel()
		delete(s.runs, name)
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// stdioSession is the session of c's instance (started if need be).
func (p *Pool) stdioSession(ctx context.Context, c *backendConn) (*mcp.ClientSession, error) {
	if p.stdio == nil {
		return nil, fmt.Errorf("stdio backend %q: command %q: %w (this edge has no --stdio-commands)", c.name, c.cfg.Command, stdio.ErrNotAllowed)
	}
	r := p.stdio.ensure(p.ctx, c.name, c.cfg)
	if r.err != nil {
		return nil, r.err
	}
	return r.inst.Session(ctx)
}

// StdioStatus is the status of this edge's instance of each stdio backend
// it serves, sorted by backend; a backend it cannot run has its reason in
// LastError and State "refused".
func (p *Pool) StdioStatus() []stdio.Status {
	if p.stdio == nil {
		return nil
	}
	p.stdio.mu.Lock()
	defer p.stdio.mu.Unlock()
	out := make([]stdio.Status, 0, len(p.stdio.runs))
	for name, r := range p.stdio.runs {
		if r.err != nil {
			out = append(out, stdio.Status{Backend: name, Command: r.cfg.Command, State: "refused", LastError: r.err.Error()})
			continue
		}
		out = append(out, r.inst.Status())
	}
	slices.SortFunc(out, func(a, b stdio.Status) int {
		if a.Backend < b.Backend {
			return -1
		}
		if a.Backend > b.Backend {
			return 1
		}
		return 0
	})
	return out
}
