package region

import (
	"context"
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
	// MirrorLag is the messages the mirror is behind its origin, as the
	// server last learnt it; MirrorActive the time since the mirror last
	// heard from its origin (0 for the local log or when unknown).
	MirrorLag    uint64        `json:"mirror_lag,omitempty"`
	MirrorActive time.Duration `json:"mirror_active_ns,omitempty"`
	// MirrorError is the server's error of the mirror, if it reports one.
	MirrorError string `json:"mirror_error,omitempty"`
	// Err is why the stream's info could not be read.
	Err string `json:"error,omitempty"`
}

// Statuses reads the info of every region's event stream in js: local's
// own log and the mirrors of the others, in the order of regions. The
// reads share one timeout, StatusTimeout unless ctx ends earlier; a stream
// that cannot be read has Err set and the others are still read.
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
	return s
}
