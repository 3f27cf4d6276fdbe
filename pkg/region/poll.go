package region

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// pollMirrors reads the info of every regional log every MirrorPoll until
// ctx ends, recording what it finds for Mirrors.
func (f *Follower) pollMirrors(ctx context.Context) {
	t := time.NewTicker(f.opts.MirrorPoll)
	defer t.Stop()
	for {
		for _, r := range f.regions {
			rctx, cancel := context.WithTimeout(ctx, f.opts.MirrorPoll)
			st, err := f.js.Stream(rctx, StreamName(r))
			cancel()
			if ctx.Err() != nil {
				return
			}
			var info *jetstream.StreamInfo
			if err == nil {
				info = st.CachedInfo()
			} else {
				err = fmt.Errorf("region %s: stream %s: %w", r, StreamName(r), err)
			}
			f.mu.Lock()
			f.mirrors[r] = observe(f.mirrors[r], info, err, f.opts.Now())
			f.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// observe is the state of a regional log after a read of its info at now
// (info, or err when it could not be read), given the state before. It is
// pure.
func observe(prev MirrorState, info *jetstream.StreamInfo, err error, now time.Time) MirrorState {
	if err != nil || info == nil {
		prev.Err = "no stream info"
		if err != nil {
			prev.Err = err.Error()
		}
		return prev
	}
	next := MirrorState{Read: true, ReadAt: now}
	switch m := info.Mirror; {
	case m == nil:
		next.Local = true
	case m.Active >= 0:
		next.SilentSince = now.Add(-m.Active)
	case prev.Read && prev.Never:
		next.Never, next.SilentSince = true, prev.SilentSince // still never heard from it
	default:
		next.Never, next.SilentSince = true, now
	}
	return next
}

// Mirrors is what the follower knows of each regional log now, judged
// with its StaleAfter.
func (f *Follower) Mirrors() Mirrors {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Mirrors{States: maps.Clone(f.mirrors), Now: f.opts.Now(), StaleAfter: f.opts.StaleAfter}
}

// Report judges every followed region's log now (Mirrors.Judge).
func (f *Follower) Report() []MirrorReport { return f.Mirrors().Judge(f.regions) }

// MirrorsOf is src's Mirrors when it is a *Follower, and a zero Mirrors
// (nothing known) otherwise.
func MirrorsOf(src any) Mirrors {
	if f, ok := src.(*Follower); ok {
		return f.Mirrors()
	}
	return Mirrors{}
}

// ReportOf is src's Report when it is a *Follower, nil otherwise.
func ReportOf(src any) []MirrorReport {
	if f, ok := src.(*Follower); ok {
		return f.Report()
	}
	return nil
}
