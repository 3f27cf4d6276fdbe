package signin

import (
	"context"
	"fmt"
	"time"
)

// A client of the 2026-07-28 revision has no session to be told of a
// sign-in: its call of a tool of a backend it has not signed in to is
// answered with an input-required result carrying a URL-mode elicitation
// (the sign-in URL) and a requestState, the sealed Resume, which its
// retry echoes; the retry waits for the sign-in (Wait) and goes on.

// MaxResume is the longest resume state OpenResume takes.
const MaxResume = 2 << 10

const (
	resumePrefix = "fr1."
	labelResume  = "fleetgate sign-in resume v1\x00"
)

// Resume is the requestState of a call answered with a sign-in request:
// the caller, the backend, and the elicitation's id.
type Resume struct {
	Identity    string `json:"i"`
	Backend     string `json:"b"`
	Elicitation string `json:"x"`
	Expires     int64  `json:"e"`
}

// SealResume is the requestState carrying r.
func (k *Key) SealResume(r Resume) (string, error) { return k.sealText(resumePrefix, labelResume, r) }

// OpenResume returns the Resume sealed in v by a Key of the same secret,
// when not expired at now.
func (k *Key) OpenResume(v string, now time.Time) (Resume, error) {
	var r Resume
	if err := k.openText(v, MaxResume, resumePrefix, labelResume, &r); err != nil {
		return Resume{}, fmt.Errorf("open resume state: %w", err)
	}
	if r.Identity == "" || r.Backend == "" || r.Elicitation == "" {
		return Resume{}, fmt.Errorf("open resume state: %w", ErrMalformed)
	}
	if now.Unix() > r.Expires {
		return Resume{}, fmt.Errorf("open resume state: %w", ErrExpired)
	}
	return r, nil
}

// ResumeState is the requestState of identity's call to backend answered
// with the sign-in elicitation id (valid as long as a sign-in).
func (m *Manager) ResumeState(identity, backend, elicitation string) (string, error) {
	return m.o.Key.SealResume(Resume{Identity: identity, Backend: backend, Elicitation: elicitation,
		Expires: m.o.Now().Add(StateLifetime).Unix()})
}

// Resumed reports whether state is the requestState of a call of
// identity to backend answered with a sign-in request (ResumeState).
func (m *Manager) Resumed(state, identity, backend string) bool {
	r, err := m.o.Key.OpenResume(state, m.o.Now())
	return err == nil && r.Identity == identity && r.Backend == backend
}

// Wait waits until identity has signed in to backend (on any edge) or ctx
// ends; it reports whether it has.
func (m *Manager) Wait(ctx context.Context, identity, backend string) bool {
	for {
		m.mu.Lock()
		e := m.entries[KeyOf(identity, backend)]
		if e != nil && e.sealed != nil {
			m.mu.Unlock()
			return true
		}
		ch := m.changed
		m.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// signal wakes the waiters (m.mu held): a sign-in was stored or heard.
func (m *Manager) signal() {
	close(m.changed)
	m.changed = make(chan struct{})
}
