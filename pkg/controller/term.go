package controller

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/prober"
	"github.com/fleetgate/fleetgate/pkg/timeline"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// command is a membership change sent to the leader's loop.
type command struct {
	apply func(f *config.Fleet) error
	// commit, when set, runs under c.mu once apply's fleet is in force.
	commit func()
	reply  chan error
	// refresh, instead of apply, selects the backends to probe and
	// rediscover now; refreshed gets how many were.
	refresh   func(BackendKey) bool
	refreshed chan int
}

type observation struct {
	key BackendKey
	obs health.Observation
}

type discovered struct {
	key BackendKey
	cat prober.Catalog
}

type runningProber struct {
	p      *prober.Prober
	cfg    events.BackendConfig
	cancel context.CancelFunc
	done   chan struct{}
}

// lead runs one leadership term: the relay, the probers and the reconcile
// loop. It returns when ctx (the term) ends or the writer is fenced, after
// stopping everything it started.
func (c *Controller) lead(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	writer, err := events.NewWriter(ctx, c.opts.Log, c.opts.ID)
	if err != nil {
		return err
	}
	relay := events.NewRelay(c.outbox, writer, &events.RelayOptions{Metrics: c.evm, Logger: &c.zl,
		TracerProvider: c.opts.TracerProvider})
	relayDone := make(chan error, 1)
	go func() { relayDone <- relay.Run(ctx) }()
	defer func() { cancel(); <-relayDone }()

	// The core starts from the log's state as the relay loaded it, with
	// the entries a previous term left in the outbox (the relay publishes
	// them first): a status they already carry is not published twice.
	var start *events.State
	for start == nil {
		select {
		case <-ctx.Done():
			return nil
		case err := <-relayDone:
			relayDone <- err
			return fmt.Errorf("relay: %w", err)
		case <-time.After(10 * time.Millisecond):
			start = relay.Expected() // the log's, and what this outbox still holds
		}
	}
	policy, _ := c.Fleet().Health.Resolve()
	core := NewCore(policy, start)
	// The config was checked without catalogs when it was loaded; under
	// the manual strategy, a collision with the catalogs the log knows is
	// reported here (the names are withheld until the config settles it).
	if err := checkManual(c.Fleet(), start); err != nil {
		c.zl.Error().Err(err).Msg("naming: the config's manual strategy meets a collision in the known catalogs; the contested names are withheld")
	}

	obsCh := make(chan observation, 1024)
	catCh := make(chan discovered, 64)
	probers := map[BackendKey]*runningProber{}
	defer func() {
		for _, p := range probers {
			p.cancel()
		}
		for _, p := range probers {
			<-p.done
		}
	}()
	sync := func() {
		fleet := c.Fleet()
		desired := desiredOf(fleet)
		core.SetDesired(desired)
		core.SetPolicy(fleet.Authorization)
		core.SetNaming(namingOf(fleet))
		c.syncProbers(ctx, probers, desired, policy, obsCh, catCh)
	}
	sync()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		if evs := core.Ready(now); len(evs) > 0 {
			if err := c.outbox.Append(evs...); err != nil {
				return fmt.Errorf("append %d events: %w", len(evs), err)
			}
			c.changeAges(core, evs)
		}
		c.publishStatuses(core)
		if d, ok := core.Deadline(); ok {
			timer.Reset(max(time.Until(d), 0))
		} else {
			timer.Reset(time.Hour)
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-relayDone:
			relayDone <- err
			if err != nil {
				return fmt.Errorf("relay: %w", err)
			}
			return nil
		case o := <-obsCh:
			core.Observe(o.key, o.obs)
			c.drainInputs(core, obsCh, catCh)
		case d := <-catCh:
			core.Catalog(d.key, toDiscovered(d.cat), time.Now())
			c.drainInputs(core, obsCh, catCh)
		case <-timer.C:
			core.Tick(time.Now())
		case cmd := <-c.cmds:
			if cmd.refresh != nil {
				n := 0
				for k, p := range probers {
					if cmd.refresh(k) {
						p.p.Refresh()
						n++
					}
				}
				cmd.refreshed <- n
				continue
			}
			err := c.applyCommand(cmd)
			if err == nil {
				sync()
			}
			cmd.reply <- err
		}
	}
}

// drainInputs applies every queued input before the next reconcile, so
// that a burst of reports becomes one batch of events.
func (c *Controller) drainInputs(core *Core, obsCh chan observation, catCh chan discovered) {
	for {
		select {
		case o := <-obsCh:
			core.Observe(o.key, o.obs)
		case d := <-catCh:
			core.Catalog(d.key, toDiscovered(d.cat), time.Now())
		default:
			return
		}
	}
}

func (c *Controller) applyCommand(cmd command) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.fleet.Clone()
	if err := cmd.apply(next); err != nil {
		return err
	}
	// Under the manual strategy a collision in the known catalogs is a
	// config error, at reload as at an admin PUT.
	if err := checkManual(next, c.reader.State()); err != nil {
		return err
	}
	c.fleet = next
	if cmd.commit != nil {
		cmd.commit()
	}
	return nil
}

// syncProbers starts a prober for every desired backend and stops the
// ones no longer desired (or whose config changed).
func (c *Controller) syncProbers(ctx context.Context, probers map[BackendKey]*runningProber, desired map[BackendKey]events.BackendConfig,
	policy health.Policy, obsCh chan observation, catCh chan discovered) {
	for k, p := range probers {
		if cfg, ok := desired[k]; !ok || !cfg.Equal(p.cfg) {
			p.cancel()
			<-p.done
			delete(probers, k)
		}
	}
	for k, cfg := range desired {
		if _, ok := probers[k]; ok {
			continue
		}
		pctx, cancel := context.WithCancel(ctx)
		rp := &runningProber{cfg: cfg, cancel: cancel, done: make(chan struct{})}
		key := k
		p := prober.New(prober.Target{Group: k.Group, Name: k.Name, URL: cfg.URL, Transport: cfg.Transport,
			Headers: cfg.Headers, AllowLinkLocal: cfg.AllowLinkLocal, Command: cfg.Command, Args: cfg.Args, Env: cfg.Env, Auth: cfg.Auth}, prober.Sink{
			Observe: func(_ prober.Target, o health.Observation) {
				select {
				case obsCh <- observation{key, o}:
				case <-pctx.Done():
				}
			},
			Catalog: func(_ prober.Target, cat prober.Catalog) {
				select {
				case catCh <- discovered{key, cat}:
				case <-pctx.Done():
				}
			},
		}, &prober.Options{Policy: policy, Logger: &c.zl, Metrics: c.pm, HTTPClient: c.opts.HTTPClient,
			TracerProvider: c.opts.TracerProvider, Stdio: c.opts.Stdio})
		rp.p = p
		go func() {
			defer close(rp.done)
			if err := p.Run(pctx); err != nil && !errors.Is(err, context.Canceled) {
				c.zl.Warn().Err(err).Str("backend", key.String()).Msg("prober stopped")
			}
		}()
		probers[k] = rp
	}
}

func toDiscovered(cat prober.Catalog) Discovered {
	d := Discovered{Tools: cat.Tools, Resources: cat.Resources, Prompts: cat.Prompts,
		ResourceTemplates: cat.ResourceTemplates, Digest: cat.Digest, ProtocolVersion: cat.ProtocolVersion,
		StatelessOnly: cat.StatelessOnly, Stateless: cat.Stateless}
	for _, it := range cat.InvalidTools {
		d.InvalidTools = append(d.InvalidTools, events.InvalidTool{Name: it.Name, Reason: it.Reason})
	}
	return d
}

func (c *Controller) publishStatuses(core *Core) {
	st := map[BackendKey]liveStatus{}
	counts := map[health.Status]int{}
	for k := range core.Desired() {
		s, reason, _ := core.Status(k)
		st[k] = liveStatus{status: s, reason: reason}
		counts[s]++
	}
	c.mu.Lock()
	prev := c.statuses
	c.statuses = st
	c.mu.Unlock()
	c.metrics.backendsByStatus(counts)
	c.logTransitions(prev, st)
	c.recordTransitions(prev, st, time.Now())
}

// recordTransitions adds to the status history every backend whose
// status changed between two publications, and every backend new to
// them (added, or the term just began: From is then empty), so that the
// dashboard's timeline shows every status the admin API reported.
func (c *Controller) recordTransitions(prev, next map[BackendKey]liveStatus, now time.Time) {
	keys := slices.Collect(maps.Keys(next))
	slices.SortFunc(keys, func(a, b BackendKey) int { return cmpString(a.String(), b.String()) })
	for _, k := range keys {
		was, ok := prev[k]
		if ok && was.status == next[k].status {
			continue
		}
		c.history.Record(timeline.Change{At: now, Group: k.Group, Backend: k.Name, From: string(was.status),
			To: string(next[k].status), Reason: next[k].reason})
	}
}

// logTransitions writes one line for every backend whose status changed
// between two publications: warn when it became unhealthy or
// unauthenticated, info else. A backend new to the term (added, or the
// term just began) is not a change.
func (c *Controller) logTransitions(prev, next map[BackendKey]liveStatus) {
	var changed []BackendKey
	for k, now := range next {
		if was, ok := prev[k]; ok && was.status != now.status {
			changed = append(changed, k)
		}
	}
	slices.SortFunc(changed, func(a, b BackendKey) int { return cmpString(a.String(), b.String()) })
	for _, k := range changed {
		was, now := prev[k], next[k]
		ev := c.zl.Info()
		if now.status == health.Unhealthy || now.status == health.Unauthenticated {
			ev = c.zl.Warn()
		}
		ev.Str("backend", k.String()).Str("from", string(was.status)).Str("to", string(now.status)).
			Str("reason", now.reason).Msg("backend status changed")
	}
}

// submit sends a membership change to the leader's loop.
func (c *Controller) submit(ctx context.Context, apply func(f *config.Fleet) error) error {
	return c.submitCommand(ctx, command{apply: apply})
}

// submitAdmin sends the admin API's change a, which is then kept across
// reloads (reload.go).
func (c *Controller) submitAdmin(ctx context.Context, a adminChange) error {
	return c.submitCommand(ctx, command{apply: a.apply, commit: func() { c.admin = remember(c.admin, a) }})
}

func (c *Controller) submitCommand(ctx context.Context, cmd command) error {
	if !c.Leading() {
		return ErrNotLeader
	}
	cmd.reply = make(chan error, 1)
	select {
	case c.cmds <- cmd:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(5 * time.Second):
		return ErrNotLeader
	}
	select {
	case err := <-cmd.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Refresh has the leader probe and rediscover the backends keep selects
// now, and returns how many it asked.
func (c *Controller) Refresh(ctx context.Context, keep func(BackendKey) bool) (int, error) {
	if !c.Leading() {
		return 0, ErrNotLeader
	}
	cmd := command{refresh: keep, refreshed: make(chan int, 1)}
	select {
	case c.cmds <- cmd:
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(5 * time.Second):
		return 0, ErrNotLeader
	}
	select {
	case n := <-cmd.refreshed:
		return n, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// ErrNotLeader is returned for changes sent to a standby.
var ErrNotLeader = errors.New("this controller is not the leader")

// Reload re-reads the config file (SIGHUP) and applies what changed in
// it since it was last loaded; the changes the admin API made since stay,
// but for those whose backend (or authorization) the file changed too:
// the file wins (reload.go). It logs every backend it adds, removes or
// changes, every admin change it keeps and every one it drops.
func (c *Controller) Reload(ctx context.Context) error {
	if c.opts.ConfigPath == "" {
		return errors.New("reload: no config path")
	}
	f, err := config.Load(c.opts.ConfigPath)
	if err != nil {
		return fmt.Errorf("reload: %w", err)
	}
	if c.opts.RefLimits != nil {
		if err := config.CheckRefs(c.opts.ConfigPath, f, *c.opts.RefLimits); err != nil {
			return fmt.Errorf("reload: %w", err)
		}
	}
	if err := checkStdio(c.opts.Stdio, f); err != nil {
		return fmt.Errorf("reload %s: %w", c.opts.ConfigPath, err)
	}
	var (
		before *config.Fleet
		r      rebased
	)
	prepare := func(cur *config.Fleet) {
		before = cur.Clone()
		r = rebase(c.file, f, c.admin)
	}
	commit := func() { c.file, c.admin = f, r.kept }
	if !c.Leading() {
		c.mu.Lock()
		prepare(c.fleet)
		c.fleet = r.fleet
		commit()
		c.mu.Unlock()
	} else {
		// apply and commit run under c.mu, in the leader's loop.
		err = c.submitCommand(ctx, command{apply: func(cur *config.Fleet) error {
			prepare(cur)
			*cur = *r.fleet
			return nil
		}, commit: commit})
		if err != nil {
			return fmt.Errorf("reload: %w", err)
		}
	}
	for _, m := range membershipChanges(before, r.fleet) {
		c.zl.Info().Str("backend", refString(m.ref)).Str("config", c.opts.ConfigPath).Msg("reload " + m.verb + " backend")
	}
	for _, a := range r.kept {
		c.zl.Info().Str("change", a.what).Msg("reload keeps an admin API change")
	}
	for _, d := range r.dropped {
		c.zl.Warn().Str("change", d.what).Str("reason", d.why).Msg("reload drops an admin API change")
	}
	return nil
}

// fileFleet returns the fleet as the config file last loaded gives it.
func (c *Controller) fileFleet() *config.Fleet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.file
}

// changeAges records the age of the changes of events just stored in the
// outbox: health events at the probe (from the observation that caused
// them) and every event at the outbox (from its time).
func (c *Controller) changeAges(core *Core, evs []*eventspb.Event) {
	for _, ev := range evs {
		at := ev.GetTime().AsTime()
		if ev.GetHealthChanged() != nil {
			if obs := core.ObservedAt(BackendKey{ev.GetGroup(), ev.GetBackend()}); !obs.IsZero() {
				c.evm.ChangeAge(events.HopObserved, at.Sub(obs))
			}
		}
		c.evm.ChangeAge(events.HopOutbox, time.Since(at))
	}
}
