package region

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// KeeperOptions configure a Keeper. A nil *KeeperOptions means defaults.
type KeeperOptions struct {
	// Interval between two looks at every mirror; default
	// DefaultKeeperInterval.
	Interval time.Duration
	// Policy decides when a mirror is re-created (Nudge).
	Policy NudgePolicy
	// Mirror configures the re-created mirrors, as EnsureMirrors'.
	Mirror *MirrorOptions
	// Leading says whether this controller leads its region; only the
	// leader re-creates mirrors, so two controllers of a region never both
	// re-create one. Nil: always (a region of one controller).
	Leading func() bool
	// OnNudge is told of each mirror re-created and why; OnError of each
	// failed look or re-creation. Neither may block.
	OnNudge func(region string, a Asset, reason string)
	OnError func(error)
}

// DefaultKeeperInterval is how often a Keeper looks at the mirrors.
const DefaultKeeperInterval = 500 * time.Millisecond

// Keeper keeps one region's mirrors of the other regions' logs moving: the
// server, after a cut of the region link, can leave a mirror waiting on
// its retry timers for tens of seconds after the link is back (a consumer
// request sent during the cut is waited on for 30 s, then it backs off).
// A Keeper looks at each mirror and its origin every Interval and
// re-creates a mirror that is behind a reachable origin and hears nothing
// from it (Nudge), which sets it up again at once.
type Keeper struct {
	js     jetstream.JetStream
	others []string
	opts   KeeperOptions
	last   map[string]time.Time // asset stream name: last re-creation
}

// NewKeeper returns the keeper of local's mirrors of the other regions in
// js (the controller's JetStream, which may delete and create streams).
func NewKeeper(js jetstream.JetStream, local string, regions []string, o *KeeperOptions) (*Keeper, error) {
	if err := CheckName(local); err != nil {
		return nil, err
	}
	k := &Keeper{js: js, last: map[string]time.Time{}}
	if o != nil {
		k.opts = *o
	}
	if k.opts.Interval <= 0 {
		k.opts.Interval = DefaultKeeperInterval
	}
	for _, r := range slices.Sorted(slices.Values(regions)) {
		if r == local {
			continue
		}
		if err := CheckName(r); err != nil {
			return nil, err
		}
		k.others = append(k.others, r)
	}
	return k, nil
}

// Run looks at the mirrors every Interval until ctx ends; it returns nil
// then.
func (k *Keeper) Run(ctx context.Context) error {
	if len(k.others) == 0 {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(k.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if k.opts.Leading == nil || k.opts.Leading() {
				k.tick(ctx)
			}
		}
	}
}

// tick looks at every mirror once and re-creates those Nudge says.
func (k *Keeper) tick(ctx context.Context) {
	for _, r := range k.others {
		for _, a := range []Asset{EventStream, SnapshotStream} {
			if ctx.Err() != nil {
				return
			}
			k.keep(ctx, r, a)
		}
	}
}

func (k *Keeper) keep(ctx context.Context, r string, a Asset) {
	lctx, cancel := context.WithTimeout(ctx, k.opts.Interval*2)
	defer cancel()
	l, err := look(lctx, k.js, r, a)
	if err != nil {
		k.report(err)
		return
	}
	sinceLast := time.Duration(-1)
	if at, ok := k.last[a.Stream(r)]; ok {
		sinceLast = time.Since(at)
	}
	nudge, reason := Nudge(l, sinceLast, k.opts.Policy)
	if !nudge {
		return
	}
	k.last[a.Stream(r)] = time.Now()
	if err := recreateMirror(lctx, k.js, r, a, k.opts.Mirror); err != nil {
		k.report(fmt.Errorf("region %s: %s: %w", r, reason, err))
		return
	}
	if k.opts.OnNudge != nil {
		k.opts.OnNudge(r, a, reason)
	}
}

func (k *Keeper) report(err error) {
	if k.opts.OnError != nil {
		k.opts.OnError(err)
	}
}
