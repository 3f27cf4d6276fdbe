package calls

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/backend"
)

// A client of the 2026-07-28 revision (no session) that declares URL
// elicitation is asked to sign in as that revision asks: its call of a
// backend's tool before sign-in is answered with an input-required result
// holding one URL-mode elicitation (the sign-in URL) under
// signInInputKey and a sealed requestState (signin.Resume). Its retry
// echoing that state and accepting waits up to signInWait for the
// sign-in (on any edge) and is then forwarded without them; a retry that
// declines, or whose user has not signed in by then, is answered with
// the sign-in URL as text. Clients declaring no URL elicitation get the
// text at once.

// signInInputKey is the key of the sign-in's input request.
const signInInputKey = "sign_in"

// signInWait bounds how long a retry waits for its user's sign-in.
const signInWait = 2 * time.Minute

// maxInputResponses bounds the inputResponses read for the sign-in's.
const maxInputResponses = 64 << 10

// resumeOutcome is what a call's requestState says of a sign-in.
type resumeOutcome int

const (
	notResumed      resumeOutcome = iota // no state of a sign-in request
	resumedSignedIn                      // the user signed in: forward the call
	resumedPending                       // declined, or not signed in in time
)

// resumeSignIn takes a retry of a call that was answered with a sign-in
// request (its requestState is ours for identity and backend b): the
// state and responses are removed from c (they are not the backend's),
// and, when the user accepted, the sign-in is waited for.
func (pl *Plane) resumeSignIn(ctx context.Context, c Call, identity, b string) resumeOutcome {
	st := c.Stateless
	if st == nil || st.RequestState == "" || !pl.o.SignIns.Resumed(st.RequestState, identity, b) {
		return notResumed
	}
	responses := st.InputResponses
	st.RequestState, st.InputResponses = "", nil
	if !accepted(responses) {
		return resumedPending
	}
	if !pl.waits.hold(identity) { // too many waiting: the URL again, at once
		return resumedPending
	}
	defer pl.waits.release(identity)
	ctx, cancel := context.WithTimeout(ctx, signInWait)
	defer cancel()
	if pl.o.SignIns.Wait(ctx, identity, b) {
		return resumedSignedIn
	}
	return resumedPending
}

// Bounds of the retries waiting for a sign-in: each holds its request
// (and its call slot) up to signInWait.
const (
	maxWaitsPerIdentity = 4
	maxWaits            = 256
)

// signInWaits counts the retries waiting for a sign-in, by identity.
type signInWaits struct {
	mu sync.Mutex
	n  int
	by map[string]int
}

// hold counts one more waiter of identity, false beyond the bounds.
func (w *signInWaits) hold(identity string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n >= maxWaits || w.by[identity] >= maxWaitsPerIdentity {
		return false
	}
	if w.by == nil {
		w.by = map[string]int{}
	}
	w.n++
	w.by[identity]++
	return true
}

func (w *signInWaits) release(identity string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n--
	if w.by[identity]--; w.by[identity] <= 0 {
		delete(w.by, identity)
	}
}

// accepted reports whether the inputResponses (JSON; bounded) accept the
// sign-in's input request.
func accepted(responses json.RawMessage) bool {
	if len(responses) == 0 || len(responses) > maxInputResponses {
		return false
	}
	var m map[string]struct {
		Action string `json:"action"`
	}
	if json.Unmarshal(responses, &m) != nil {
		return false
	}
	return m[signInInputKey].Action == "accept"
}

// signInInput is the input-required reply asking the caller to open
// authURL (the sign-in elicitation id) to sign in to b.
func (pl *Plane) signInInput(identity, b, authURL, elicitation string) (backend.Reply, error) {
	state, err := pl.o.SignIns.ResumeState(identity, b, elicitation)
	if err != nil {
		return backend.Reply{}, err
	}
	res, err := inputRequired(mcp.InputRequestMap{signInInputKey: &mcp.ElicitParams{Mode: "url", URL: authURL,
		ElicitationID: elicitation, Message: fmt.Sprintf("Sign in to %s to use its tools.", b)}}, state) // held.go
	if err != nil {
		return backend.Reply{}, err
	}
	return backend.Reply{Res: res}, nil
}
