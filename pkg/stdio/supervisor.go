package stdio

import (
	"time"
)

// State is where one instance's supervision is.
type State int

// States of a Supervisor.
const (
	// Idle: not started yet.
	Idle State = iota
	// Starting: a process was asked for; it has not answered initialize.
	Starting
	// Up: the process runs and its MCP session is initialized.
	Up
	// Backoff: the process is gone; the next start is due at Wake.
	Backoff
	// Stopping: asked to stop; SIGTERM sent, SIGKILL due at Wake.
	Stopping
	// Stopped: stopped and its process gone. Final.
	Stopped
)

func (s State) String() string {
	switch s {
	case Idle:
		return "idle"
	case Starting:
		return "starting"
	case Up:
		return "up"
	case Backoff:
		return "backoff"
	case Stopping:
		return "stopping"
	case Stopped:
		return "stopped"
	}
	return "unknown"
}

// InputKind says what happened.
type InputKind int

// Inputs of a Supervisor.
const (
	// Start asks for the instance to run.
	Start InputKind = iota + 1
	// Ready: the process started and its session is initialized.
	Ready
	// Failed: the start failed (spawn, the process cap, initialize) and
	// no process of it is left.
	Failed
	// Exited: the process ended (it was Up, or Stopping).
	Exited
	// Tick: time passed; At is now.
	Tick
	// Kick asks for a start now, when in Backoff (a call found the
	// instance down); the restart cap still holds.
	Kick
	// Stop asks for the instance to end for good.
	Stop
)

// Input is one thing that happened to the instance, at At.
type Input struct {
	Kind InputKind
	At   time.Time
	// Reason says why a start failed or a process exited.
	Reason string
}

// Action is what the driver must do after a Step. At most one of Spawn,
// Terminate and Kill is set.
type Action struct {
	// Spawn: start a process (then Step Ready or Failed).
	Spawn bool
	// Terminate: end the running process politely (close its stdin,
	// SIGTERM to its group); then Step Exited.
	Terminate bool
	// Kill: SIGKILL its process group.
	Kill bool
}

// Policy bounds a Supervisor. Zero fields take the defaults.
type Policy struct {
	// MinBackoff is the wait before the first restart (default 100ms); it
	// doubles at each failed start up to MaxBackoff.
	MinBackoff time.Duration
	// MaxBackoff caps the wait (default 10s; callers pass the probe
	// interval). A process that stayed up at least MaxBackoff restarts
	// after MinBackoff again.
	MaxBackoff time.Duration
	// MaxRestartsPerMinute caps the starts in any minute after the first
	// (default 10).
	MaxRestartsPerMinute int
	// Grace is the wait between SIGTERM and SIGKILL on stop (default 5s).
	Grace time.Duration
}

// Defaults of a Policy.
const (
	DefaultMinBackoff           = 100 * time.Millisecond
	DefaultMaxBackoff           = 10 * time.Second
	DefaultMaxRestartsPerMinute = 10
	DefaultGrace                = 5 * time.Second
)

// WithDefaults returns p with every zero field set to its default.
func (p Policy) WithDefaults() Policy {
	if p.MinBackoff <= 0 {
		p.MinBackoff = DefaultMinBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	p.MaxBackoff = max(p.MaxBackoff, p.MinBackoff)
	if p.MaxRestartsPerMinute <= 0 {
		p.MaxRestartsPerMinute = DefaultMaxRestartsPerMinute
	}
	if p.Grace <= 0 {
		p.Grace = DefaultGrace
	}
	return p
}

// Supervisor is the supervision of one instance as a pure state machine:
// Step it with what happened, then Take the action and read Wake for when
// to Tick it next. It starts no goroutine and reads no clock.
type Supervisor struct {
	p       Policy
	state   State
	backoff time.Duration // the next wait in Backoff
	wake    time.Time     // next start (Backoff) or SIGKILL (Stopping)
	upSince time.Time
	starts  []time.Time // start times within the last minute, oldest first
	action  Action
	reason  string // why the last process ended or start failed
	// capped: the restart cap holds the next start back.
	capped bool
	// restarts counts starts after the first.
	restarts int
	started  bool
	// stopAsked: Stop came while a start was in progress.
	stopAsked bool
}

// NewSupervisor returns an Idle supervisor under p.
func NewSupervisor(p Policy) *Supervisor {
	p = p.WithDefaults()
	return &Supervisor{p: p, backoff: p.MinBackoff}
}

// State returns the current state.
func (s *Supervisor) State() State { return s.state }

// Wake returns when the driver must Tick next; zero for never.
func (s *Supervisor) Wake() time.Time {
	if s.state == Backoff || (s.state == Stopping && !s.wake.IsZero()) {
		return s.wake
	}
	return time.Time{}
}

// Reason is why the last process ended or the last start failed.
func (s *Supervisor) Reason() string { return s.reason }

// Capped reports whether the restart cap is holding the next start back.
func (s *Supervisor) Capped() bool { return s.capped }

// Restarts counts the starts after the first.
func (s *Supervisor) Restarts() int { return s.restarts }

// Take returns the action due and clears it.
func (s *Supervisor) Take() Action {
	a := s.action
	s.action = Action{}
	return a
}

// Step feeds one input.
func (s *Supervisor) Step(in Input) {
	switch in.Kind {
	case Start:
		if s.state == Idle {
			s.spawn(in.At)
		}
	case Ready:
		if s.state == Starting {
			s.state, s.upSince = Up, in.At
			if s.stopAsked {
				s.stop(in.At)
			}
		}
	case Failed:
		if s.state == Starting {
			s.reason = in.Reason
			if s.stopAsked {
				s.state = Stopped
				return
			}
			s.backOff(in.At, false)
		}
	case Exited:
		switch s.state {
		case Up:
			s.reason = in.Reason
			s.backOff(in.At, in.At.Sub(s.upSince) >= s.p.MaxBackoff)
		case Stopping:
			s.state, s.wake = Stopped, time.Time{}
		}
	case Tick:
		switch s.state {
		case Backoff:
			if !in.At.Before(s.wake) {
				s.spawn(in.At)
			}
		case Stopping:
			if !s.wake.IsZero() && !in.At.Before(s.wake) {
				s.action = Action{Kill: true}
				s.wake = time.Time{} // killed once; Exited follows
			}
		}
	case Kick:
		if s.state == Backoff {
			s.spawn(in.At)
		}
	case Stop:
		s.stop(in.At)
	}
}

func (s *Supervisor) stop(at time.Time) {
	switch s.state {
	case Idle, Backoff:
		s.state, s.wake, s.capped = Stopped, time.Time{}, false
	case Starting:
		// The start in progress ends in Ready (then stopped) or Failed.
		s.stopAsked = true
	case Up:
		s.state, s.wake = Stopping, at.Add(s.p.Grace)
		s.action = Action{Terminate: true}
	}
}

// backOff enters Backoff after a failed start or an exit; reset restarts
// the backoff from MinBackoff (the process had been up long enough).
func (s *Supervisor) backOff(at time.Time, reset bool) {
	if reset {
		s.backoff = s.p.MinBackoff
	}
	s.state, s.wake = Backoff, at.Add(s.backoff)
	s.backoff = min(2*s.backoff, s.p.MaxBackoff)
}

// spawn starts a process now unless the restart cap holds it back; then
// the start is due when the oldest start leaves the minute.
func (s *Supervisor) spawn(at time.Time) {
	i := 0
	for i < len(s.starts) && !s.starts[i].After(at.Add(-time.Minute)) {
		i++
	}
	s.starts = s.starts[i:]
	if s.started && len(s.starts) >= s.p.MaxRestartsPerMinute {
		s.state, s.capped = Backoff, true
		s.wake = s.starts[0].Add(time.Minute + time.Nanosecond)
		return
	}
	if s.started {
		s.restarts++
	}
	s.started, s.capped = true, false
	s.starts = append(s.starts, at)
	s.state = Starting
	s.action = Action{Spawn: true}
}
