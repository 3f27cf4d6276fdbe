package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// A stdio target (Transport TransportStdio) is probed over the session of
// the prober's own instance of it (package stdio): Run runs the instance
// beside the probes and returns once its process is gone. The instance is
// supervised on its own (restart with backoff capped at the probe
// interval); a session that drops is a Failure, and the prober takes the
// next one the instance makes. The raw list results are seen on the
// instance's connection (tapConn) instead of the HTTP wire.

// TransportStdio names a stdio Target.
const TransportStdio = "stdio"

// runStdio starts the instance of a stdio target; stop ends it and waits.
func (p *Prober) runStdio(ctx context.Context) (stop func(), err error) {
	if p.stdioHost == nil {
		return nil, fmt.Errorf("prober %s: stdio backend, but this host has no --stdio-commands", p.target)
	}
	p.stdioLists = newCapture()
	inst, err := p.stdioHost.Instance(stdio.Spec{Backend: p.target.String(), Command: p.target.Command,
		Args: p.target.Args, Env: p.target.Env}, &stdio.InstanceOptions{
		MaxBackoff: p.policy.Interval,
		Client:     p.client,
		Wrap:       func(c mcp.Connection) mcp.Connection { return &tapConn{Connection: c, lists: p.stdioLists} },
	})
	if err != nil {
		return nil, fmt.Errorf("prober %s: %w", p.target, err)
	}
	p.inst = inst
	ictx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := inst.Run(ictx); err != nil {
			p.log.Warn().Err(err).Msg("stdio instance")
		}
	})
	return func() { cancel(); wg.Wait() }, nil
}

// connectStdio takes the instance's session (waiting while it starts).
func (p *Prober) connectStdio(ctx context.Context) (*session, error) {
	sctx, stop := context.WithCancel(ctx)
	s := &session{stop: stop, dropped: make(chan struct{}), shared: true}
	s.calls, s.cancelCalls = context.WithCancel(sctx)
	s.wire = &wire{ctx: sctx, bound: p.policy.Timeout, lists: p.stdioLists, drop: s.drop}
	cctx, cancel := context.WithTimeout(ctx, stdio.DefaultConnectTimeout+p.policy.Timeout)
	cs, err := p.inst.Session(cctx)
	cancel()
	if err != nil {
		stop()
		return nil, &connectError{result: resultFailure, reason: err.Error(), err: err}
	}
	s.cs = cs
	s.wg.Go(func() {
		err := cs.Wait()
		if s.wire.closing.Load() {
			return
		}
		if err == nil {
			err = mcp.ErrConnectionClosed
		}
		s.drop(fmt.Sprintf("stdio session closed: %v (%s)", err, p.inst.Status().LastError), false)
	})
	return s, nil
}

// tapConn sees the list calls written and their results read, for the
// capture of raw definitions.
type tapConn struct {
	mcp.Connection
	lists *capture
}

func (t *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		switch req.Method {
		case methodTools, methodResources, methodPrompts, methodTemplates:
			var params struct {
				Cursor string `json:"cursor"`
			}
			_ = json.Unmarshal(req.Params, &params)
			if id, ok := wireID(req.ID); ok {
				t.lists.expect(id, listKey{req.Method, params.Cursor})
			}
		}
	}
	return t.Connection.Write(ctx, msg)
}

func (t *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := t.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil && resp.Result != nil {
		if id, ok := wireID(resp.ID); ok {
			t.lists.result(id, resp.Result)
		}
	}
	return msg, err
}

// wireID converts a go-sdk request id.
func wireID(id jsonrpc.ID) (mcpwire.ID, bool) {
	switch v := id.Raw().(type) {
	case int64:
		return mcpwire.IntID(v), true
	case string:
		return mcpwire.StringID(v), true
	}
	return mcpwire.ID{}, false
}
