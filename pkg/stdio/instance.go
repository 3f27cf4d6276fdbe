package stdio

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// ProtocolVersion is the protocol version the sessions ask for: the
// newest session-based one (the go-sdk's default would start with
// server/discover, which stdio servers of today do not know).
const ProtocolVersion = "2025-11-25"

// DefaultConnectTimeout bounds a process's start and initialize.
const DefaultConnectTimeout = 10 * time.Second

// ErrDown is matched by the error of a call to an instance that is down.
var ErrDown = errors.New("stdio instance down")

// ErrRunning is returned by Run when the Instance runs already, or ran.
var ErrRunning = errors.New("stdio instance already run")

// InstanceOptions configure one Instance. Zero fields take the host's.
type InstanceOptions struct {
	// MaxBackoff caps the restart backoff (callers pass the probe
	// interval); zero: the host policy's.
	MaxBackoff time.Duration
	// ConnectTimeout bounds a start: the process and its initialize
	// (default DefaultConnectTimeout).
	ConnectTimeout time.Duration
	// Client makes the sessions (nil: the host's).
	Client *mcp.Client
	// Wrap, when set, wraps the connection of every new session (e.g.
	// to see the raw results).
	Wrap func(mcp.Connection) mcp.Connection
}

// Status is what an instance is doing, as admin APIs show it.
type Status struct {
	Backend string `json:"backend"`
	Command string `json:"command"`
	State   string `json:"state"`
	PID     int    `json:"pid,omitempty"`
	// Restarts counts the starts after the first.
	Restarts int `json:"restarts"`
	// Since is when the instance entered State.
	Since time.Time `json:"since"`
	// LastError is why the last process ended or start failed.
	LastError string `json:"last_error,omitempty"`
	// Capped: the restart cap holds the next start back.
	Capped bool `json:"restart_capped,omitempty"`
}

// Instance is one supervised process of a stdio backend and the one MCP
// session to it. Run drives it; Session hands the session to callers.
type Instance struct {
	h    *Host
	spec Spec
	cmd  Command
	o    InstanceOptions
	log  zerolog.Logger
	sup  *Supervisor // Run's only

	events chan procEvent
	kick   chan struct{}
	ran    atomic.Bool

	mu      sync.Mutex
	status  Status
	cs      *mcp.ClientSession
	changed chan struct{} // closed at every change of status
}

// Instance makes the instance of spec; its command must be in the host's
// allow-list (an error wrapping ErrNotAllowed otherwise).
func (h *Host) Instance(spec Spec, o *InstanceOptions) (*Instance, error) {
	if err := h.Check(spec); err != nil {
		return nil, err
	}
	if o == nil {
		o = &InstanceOptions{}
	}
	pol := h.o.Policy
	if o.MaxBackoff > 0 {
		pol.MaxBackoff = max(o.MaxBackoff, pol.MinBackoff)
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Client == nil {
		o.Client = h.o.Client
	}
	cmd := h.cmds[spec.Command]
	spec.Args, spec.Env = slices.Clone(spec.Args), maps.Clone(spec.Env)
	return &Instance{
		h: h, spec: spec, cmd: cmd, o: *o, sup: NewSupervisor(pol),
		log:    h.log.With().Str("backend", spec.Backend).Str("command", spec.Command).Logger(),
		events: make(chan procEvent), kick: make(chan struct{}, 1),
		status:  Status{Backend: spec.Backend, Command: spec.Command, State: Idle.String(), Since: time.Now()},
		changed: make(chan struct{}),
	}, nil
}

// Spec returns what the instance runs.
func (i *Instance) Spec() Spec { return i.spec }

// Status returns the instance's status now.
func (i *Instance) Status() Status {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.status
}

// Kick asks a down instance to start again now (the restart cap holds).
func (i *Instance) Kick() {
	select {
	case i.kick <- struct{}{}:
	default:
	}
}

// Session returns the instance's MCP session. While the instance starts
// it waits (until ctx ends); when it is down it asks for a restart (Kick)
// and returns an error naming the backend and wrapping ErrDown.
func (i *Instance) Session(ctx context.Context) (*mcp.ClientSession, error) {
	for {
		i.mu.Lock()
		st, cs, ch, reason := i.status.State, i.cs, i.changed, i.status.LastError
		i.mu.Unlock()
		switch st {
		case Up.String():
			return cs, nil
		case Idle.String(), Starting.String():
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, fmt.Errorf("stdio backend %q: %w: still starting: %w", i.spec.Backend, ErrDown, ctx.Err())
			}
		}
		if st == Backoff.String() {
			i.Kick()
		}
		i.h.o.Metrics.downCall(i.spec.Backend)
		if reason == "" {
			reason = st
		}
		return nil, fmt.Errorf("stdio backend %q: %w (%s); restarting", i.spec.Backend, ErrDown, reason)
	}
}

// procEvent is what a process goroutine tells Run.
type procEvent struct {
	p    *proc
	kind InputKind // Ready, Failed or Exited
	cs   *mcp.ClientSession
	err  error
}

// proc is one process of the instance.
type proc struct {
	ctx    context.Context // ends the start in progress
	cancel context.CancelFunc

	mu    sync.Mutex
	pid   int // the process and its group; 0 until started
	stdin *os.File
}

// signal sends sig to the process's group.
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	pid := p.pid
	p.mu.Unlock()
	if pid > 0 {
		_ = syscall.Kill(-pid, sig)
	}
}

// terminate ends the start in progress, closes the process's stdin and
// sends SIGTERM to its group.
func (p *proc) terminate() {
	p.cancel()
	p.mu.Lock()
	in := p.stdin
	p.mu.Unlock()
	if in != nil {
		_ = in.Close()
	}
	p.signal(syscall.SIGTERM)
}

// Run supervises the instance until ctx ends, then stops its process
// (stdin closed and SIGTERM, SIGKILL after the grace) and returns once the
// process and every goroutine it started are gone. An Instance runs once.
func (i *Instance) Run(ctx context.Context) error {
	if !i.ran.CompareAndSwap(false, true) {
		return fmt.Errorf("stdio backend %q: %w", i.spec.Backend, ErrRunning)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer i.h.o.Metrics.forget(i.spec.Backend)
	var cur *proc
	done := ctx.Done()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	i.sup.Step(Input{Kind: Start, At: time.Now()})
	for {
		switch a := i.sup.Take(); {
		case a.Spawn:
			if i.sup.Restarts() > i.status.Restarts {
				i.h.o.Metrics.restart(i.spec.Backend)
			}
			pctx, cancel := context.WithCancel(context.Background())
			cur = &proc{ctx: pctx, cancel: cancel}
			p := cur
			wg.Go(func() { i.runProc(p, &wg) })
		case a.Terminate:
			i.log.Info().Msg("stdio process stopping")
			cur.terminate()
		case a.Kill:
			i.log.Warn().Msg("stdio process did not stop within the grace; SIGKILL")
			cur.signal(syscall.SIGKILL)
		}
		i.publish(cur)
		if i.sup.State() == Stopped {
			return nil
		}
		var wake <-chan time.Time
		if w := i.sup.Wake(); !w.IsZero() {
			if timer == nil {
				timer = time.NewTimer(time.Until(w))
			} else {
				timer.Reset(time.Until(w))
			}
			wake = timer.C
		}
		select {
		case <-done:
			done = nil
			if i.sup.State() == Starting && cur != nil {
				cur.terminate() // ends the start; Failed or Ready follows
			}
			i.sup.Step(Input{Kind: Stop, At: time.Now()})
		case ev := <-i.events:
			if ev.p != cur {
				continue
			}
			in := Input{Kind: ev.kind, At: time.Now()}
			if ev.err != nil {
				in.Reason = ev.err.Error()
			}
			i.mu.Lock()
			i.cs = ev.cs // nil unless Ready
			i.mu.Unlock()
			switch ev.kind {
			case Ready:
				i.log.Info().Msg("stdio process up")
			case Failed:
				i.log.Warn().Err(ev.err).Msg("stdio process start failed")
			case Exited:
				i.log.Warn().Str("reason", in.Reason).Msg("stdio process exited")
			}
			i.sup.Step(in)
		case <-i.kick:
			i.sup.Step(Input{Kind: Kick, At: time.Now()})
		case <-wake:
			i.sup.Step(Input{Kind: Tick, At: time.Now()})
		}
	}
}

// publish copies the supervisor's state into the status callers read.
func (i *Instance) publish(cur *proc) {
	st := i.sup.State()
	i.mu.Lock()
	defer i.mu.Unlock()
	s := i.status
	if s.State != st.String() {
		s.State, s.Since = st.String(), time.Now()
	}
	s.Restarts, s.LastError, s.Capped = i.sup.Restarts(), i.sup.Reason(), i.sup.Capped()
	s.PID = 0
	if cur != nil && (st == Up || st == Starting || st == Stopping) {
		cur.mu.Lock()
		s.PID = cur.pid
		cur.mu.Unlock()
	}
	if st != Up {
		i.cs = nil
	}
	i.h.o.Metrics.setUp(i.spec.Backend, st == Up)
	if s != i.status {
		i.status = s
		close(i.changed)
		i.changed = make(chan struct{})
	}
}

// environ is the process's environment: the host's PATH and HOME, then
// the entry's variables, then the backend's (references resolved now).
func (i *Instance) environ() ([]string, error) {
	env := map[string]string{}
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(i.cmd.Env)) {
		v := i.cmd.Env[k]
		if v.Ref == (credential.Ref{}) {
			env[k] = v.Literal
			continue
		}
		s, err := credential.Resolve(v.Ref)
		if err != nil {
			return nil, fmt.Errorf("env %s of entry %q: %w", k, i.spec.Command, err)
		}
		env[k] = s.Reveal()
	}
	for _, k := range slices.Sorted(maps.Keys(i.spec.Env)) {
		s, err := credential.Resolve(i.spec.Env[k])
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		env[k] = s.Reveal()
	}
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out, nil
}

// runProc starts one process, connects its session and tells Run: Ready
// then Exited, or Failed. It returns once the process, its group and its
// stderr reader are gone.
func (i *Instance) runProc(p *proc, wg *sync.WaitGroup) {
	defer p.cancel()
	send := func(ev procEvent) {
		ev.p = p
		i.events <- ev // Run reads until Stopped, which needs this event
	}
	if !i.h.acquire() {
		send(procEvent{kind: Failed, err: fmt.Errorf("start %q: %w (%d)", i.spec.Command, ErrProcessCap, i.h.o.MaxProcesses)})
		return
	}
	defer i.h.release()
	if p.ctx.Err() != nil {
		send(procEvent{kind: Failed, err: fmt.Errorf("start %q: stopped", i.spec.Command)})
		return
	}
	env, err := i.environ()
	if err != nil {
		send(procEvent{kind: Failed, err: fmt.Errorf("start %q: %w", i.spec.Command, err)})
		return
	}
	argv := append(slices.Clone(i.cmd.Argv), i.spec.Args...)
	path, err := exec.LookPath(argv[0])
	if err != nil {
		send(procEvent{kind: Failed, err: fmt.Errorf("start %q: %w", i.spec.Command, err)})
		return
	}
	var files []*os.File // closed on return
	defer func() {
		for _, f := range files {
			_ = f.Close()
		}
	}()
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		send(procEvent{kind: Failed, err: fmt.Errorf("start %q: pipes: %w", i.spec.Command, err)})
		return
	}
	c := &exec.Cmd{Path: path, Args: argv, Env: env, Stdin: inR, Stdout: outW, Stderr: errW,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}}
	if err := c.Start(); err != nil {
		send(procEvent{kind: Failed, err: fmt.Errorf("start %q: %w", i.spec.Command, err)})
		return
	}
	// The child holds its ends now.
	_ = inR.Close()
	_ = outW.Close()
	_ = errW.Close()
	p.mu.Lock()
	p.pid, p.stdin = c.Process.Pid, inW
	p.mu.Unlock()
	if p.ctx.Err() != nil { // stopped meanwhile: terminate missed the pid
		p.terminate()
	}
	var stderr sync.WaitGroup
	stderr.Go(func() { logStderr(errR, i.log, time.Now) })
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	reap := func() error {
		err := <-waited
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // stragglers of its group
		return err
	}

	var t mcp.Transport = &mcp.IOTransport{
		Reader:        mcpwire.Guard(outR, false, mcpwire.Limits{}), // depth per message
		Writer:        inW,
		MaxLineLength: i.h.o.MaxMessage,
	}
	if i.o.Wrap != nil {
		t = wrapTransport{t, i.o.Wrap}
	}
	cctx, cancel := context.WithTimeout(p.ctx, i.o.ConnectTimeout)
	cs, err := i.o.Client.Connect(cctx, t, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	cancel()
	if err != nil {
		p.signal(syscall.SIGKILL)
		werr := reap()
		stderr.Wait()
		if werr != nil {
			err = fmt.Errorf("%w (process: %v)", err, werr)
		}
		send(procEvent{kind: Failed, err: fmt.Errorf("start %q: initialize: %w", i.spec.Command, err)})
		return
	}
	send(procEvent{kind: Ready, cs: cs})
	werr := reap()
	_ = cs.Close()
	stderr.Wait()
	if werr == nil {
		werr = errors.New("exited with status 0")
	}
	send(procEvent{kind: Exited, err: werr})
}

// wrapTransport wraps the connection its transport makes.
type wrapTransport struct {
	t    mcp.Transport
	wrap func(mcp.Connection) mcp.Connection
}

func (w wrapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := w.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return w.wrap(c), nil
}
