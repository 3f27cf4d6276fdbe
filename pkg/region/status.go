package region

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StatusTimeout bounds the stream info reads of one Statuses call when ctx
// has no earlier deadline.
const StatusTimeout = 2 * time.Second

// Status is what one NATS holds of one region's event log: its own log
// (Local) or the mirror of another region's.
type Status struct {
	Region string `json:"region"`
	// Local: the region's own log, written here.
	Local bool `json:"local"`
	// Head is the last sequence held here, the region's generation as
	// this NATS has it.
	Head uint64 `json:"head"`
	// OriginHead is, for a mirror, the head of the origin's log read
	// across the region link (through the origin's JetStream domain), and
	// Lag the generations the mirror is behind it: the heads compared.
	// Lag is absent when the origin could not be read (OriginError says
	// why): how far behind the mirror is then is unknown, never 0.
	OriginHead  uint64  `json:"origin_head,omitempty"`
	Lag         *uint64 `json:"lag,omitempty"`
	OriginError string  `json:"origin_error,omitempty"`
	// MirrorLag is the server's own figure of the mirror's lag, as it last
	// learnt it from its origin (it stays at its last value while the link
	// is cut: Lag is the one to trust); MirrorActive the time since the
	// mirror last heard from its origin, how long it has been inactive (a
	// live mirror hears a heartbeat every second; -1 never since the
	// server started; 0 for the local log).
	MirrorLag    uint64        `json:"mirror_lag,omitempty"`
	MirrorActive time.Duration `json:"mirror_active_ns,omitempty"`
	// MirrorError is the server's error of the mirror, if it reports one.
	MirrorError string `json:"mirror_error,omitempty"`
	// Err is why the stream's info could not be read.
	Err string `json:"error,omitempty"`
}

// Statuses reads the info of every region's event stream in js: local's
// own log and the mirrors of the others, in the order of regions, with
// the head of each mirror's origin read across the link. The reads share
// one timeout, StatusTimeout unless ctx ends earlier; a stream that cannot
// be read has Err set and the others are still read.
func Statuses(ctx context.Context, js jetstream.JetStream, local string, regions []string) []Status {
	ctx, cancel := context.WithTimeout(ctx, StatusTimeout)
	defer cancel()
	out := make([]Status, 0, min(len(regions), MaxRegions))
	for _, r := range regions {
		if len(out) == MaxRegions {
			break
		}
		out = append(out, status(ctx, js, r, r == local))
	}
	return out
}

func status(ctx context.Context, js jetstream.JetStream, r string, local bool) Status {
	s := Status{Region: r, Local: local}
	if err := CheckName(r); err != nil {
		s.Err = err.Error()
		return s
	}
	st, err := js.Stream(ctx, StreamName(r))
	if err != nil {
		s.Err = fmt.Errorf("region %s: stream %s: %w", r, StreamName(r), err).Error()
		return s
	}
	info := st.CachedInfo()
	s.Head = info.State.LastSeq
	if m := info.Mirror; m != nil {
		s.MirrorLag, s.MirrorActive = m.Lag, m.Active
		if m.Error != nil {
			s.MirrorError = m.Error.Error()
		}
	}
	if local {
		return s
	}
	head, err := originHead(ctx, js, r, EventStream)
	if err != nil {
		s.OriginError = err.Error()
		return s
	}
	s.OriginHead = head
	lag := head - min(head, s.Head)
	s.Lag = &lag
	return s
}

// originHead reads the head of asset a in region r's own JetStream,
// across the region link (the origin's domain API).
func originHead(ctx context.Context, js jetstream.JetStream, r string, a Asset) (uint64, error) {
	djs, err := jetstream.NewWithDomain(js.Conn(), Domain(r))
	if err != nil {
		return 0, fmt.Errorf("region %s: origin %s: %w", r, a.Stream(r), err)
	}
	st, err := djs.Stream(ctx, a.Stream(r))
	if err != nil {
		return 0, fmt.Errorf("region %s: origin %s: %w", r, a.Stream(r), err)
	}
	return st.CachedInfo().State.LastSeq, nil
}

// look reads the mirror of asset a of region r in js and its origin.
func look(ctx context.Context, js jetstream.JetStream, r string, a Asset) (Look, error) {
	var l Look
	head, err := originHead(ctx, js, r, a)
	l.OriginOK, l.OriginHead = err == nil, head
	st, err := js.Stream(ctx, a.Stream(r))
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		l.Missing = true
		return l, nil
	case err != nil:
		return l, fmt.Errorf("region %s: mirror %s: %w", r, a.Stream(r), err)
	}
	info := st.CachedInfo()
	l.Head, l.Active = info.State.LastSeq, -1
	if m := info.Mirror; m != nil {
		l.Active = m.Active
	}
	return l, nil
}
