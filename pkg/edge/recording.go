package edge

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/edge/records"
	"github.com/fleetgate/fleetgate/pkg/edge/session"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// RecordOptions configure the shared session records that let a session
// continue on another edge (see the package doc, "Sessions across edges",
// and package records).
type RecordOptions = records.Options

// openRecords opens the session store of Options.Records; nil without.
func (e *Edge) openRecords() (*records.Recorder, error) {
	return records.Open(e.opts.Records, records.Wiring{Edge: e.opts.ID, Sessions: e.reg, Hijacks: e.hj,
		Log: &e.log, Registry: e.opts.Registry, Written: e.rm.written})
}

// sessionCreated starts the record of a session this edge initialized
// and, with a store, writes it before the initialize response leaves.
func (e *Edge) sessionCreated(s *session.Session, owner string, params json.RawMessage, conv convergence.Record, now time.Time) {
	e.recs.Created(s, sessionstore.Record{ID: s.ID(), Owner: owner, Group: e.opts.Group, Mode: sessionstore.Mode(e.opts.Mode),
		InitializeParams: params, ProtocolVersion: conv.ProtocolVersion, ClientListChanged: conv.ClientListChanged,
		AppliedGeneration: conv.CurrentGeneration, RegistryDigest: conv.CurrentDigest, Edge: e.opts.ID,
		CreatedAt: now, LastSeen: now, Convergence: conv}, now)
}

// levelSet notes the log level the client of s set, in its record too:
// its calls are the go-sdk's from now on (they relay log messages).
func (e *Edge) levelSet(s *session.Session, level string) {
	s.SetFlags(session.FlagLogs)
	if s.Record().SetLogLevel(level) {
		e.recs.Enqueue(s)
	}
}

// startRecords starts the record writer and the call trail; the returned
// function, called after the sessions were closed, writes the last
// records and drains the trail.
func (e *Edge) startRecords() (stop func()) {
	e.recs.Start()
	var trail sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	if t := e.opts.CallTrail; t != nil {
		trail.Go(func() {
			if err := t.Run(ctx); err != nil {
				e.log.Warn().Err(err).Msg("call trail")
			}
		})
	}
	return func() {
		e.recs.Stop()
		cancel()
		trail.Wait()
	}
}

// storedInfo describes a session this edge does not serve from its
// stored record (another edge serves it, or none does at the moment).
func (e *Edge) storedInfo(ctx context.Context, id string) (SessionInfo, bool) {
	if e.recs == nil || sessionstore.ValidateID(id) != nil {
		return SessionInfo{}, false
	}
	rec, _, err := e.recs.Store().Get(ctx, id)
	if err != nil || rec.Group != e.opts.Group {
		return SessionInfo{}, false
	}
	verdict, reason := convergence.Explain(rec.Convergence)
	conv := rec.Convergence
	return SessionInfo{ID: rec.ID, Kind: session.KindSession, ProtocolVersion: rec.ProtocolVersion,
		AppliedGeneration: rec.AppliedGeneration, Digest: rec.RegistryDigest, Verdict: string(verdict),
		VerdictReason: reason, Created: rec.CreatedAt, Tools: conv.Traversal.Tools, Edge: rec.Edge,
		Convergence: &conv}, true
}
