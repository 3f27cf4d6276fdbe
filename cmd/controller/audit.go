package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/catalog/fromstate"
	"github.com/fleetgate/fleetgate/pkg/cmdline"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

const auditUsage = `usage:
  controller audit state   --generation G         the fleet state at generation G, tool policy and each group's exposed names included
  controller audit state   --regions a,b [--vector a=12,b=7]  a multi-region fleet's merged state: each regional log
                           (own and mirrors, in the NATS audited) replayed to its generation in the vector (a region
                           left out: its head) and merged; prints the vector and the merge's conflicts
  controller audit history --backend NAME [--group G]  the backend's events with generations and times
  controller audit export  --from G1 --to G2      events G1..G2 as JSON lines
flags common to all: --nats-url URL (a running fleet) or --data-dir DIR (a stopped fleet's controller data dir);
  --nats-nkey-seed FILE (an embedded node's <data-dir>/nats/edge.seed is enough), --nats-creds FILE,
  --nats-tls-ca, --nats-tls-cert, --nats-tls-key FILE`

// audit runs an audit subcommand and returns the exit status.
func audit(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, auditUsage)
		return 2
	}
	sub := args[0]
	fs := flag.NewFlagSet("audit "+sub, flag.ContinueOnError)
	natsURL := fs.String("nats-url", "", "NATS of a running fleet (default nats://127.0.0.1:4222 unless --data-dir is given)")
	dataDir := fs.String("data-dir", "", "data dir of a stopped fleet's controller: its embedded NATS store is opened read-only use")
	gen := fs.Uint64("generation", 0, "generation (state)")
	backend := fs.String("backend", "", "backend name (history)")
	group := fs.String("group", "", "group name (history; default any group)")
	from := fs.Uint64("from", 1, "first generation (export)")
	to := fs.Uint64("to", 0, "last generation (export; default the head)")
	var rt regionTarget
	rt.flags(fs)
	var na natsAccess
	na.accessFlags(fs, "")
	if err := cmdline.Parse(fs, args[1:], os.Getenv); err != nil {
		fmt.Fprintf(stderr, "controller audit %s: %v\n%s\n", sub, err, auditUsage)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := na.access.Check(); err != nil {
		fmt.Fprintf(stderr, "controller audit %s: %v\n", sub, err)
		return 2
	}
	if err := rt.check(sub, *gen); err != nil {
		fmt.Fprintf(stderr, "controller audit %s: %v\n%s\n", sub, err, auditUsage)
		return 2
	}
	js, closeJS, err := openAuditJetStream(*natsURL, *dataDir, na.access)
	if err != nil {
		fmt.Fprintf(stderr, "controller audit %s: %v\n", sub, err)
		return 1
	}
	defer closeJS()
	if sub == "state" && rt.regions != nil {
		err = auditRegionState(ctx, js, rt.regions, rt.vector, stdout)
		if err != nil {
			fmt.Fprintf(stderr, "controller audit %s: %v\n", sub, err)
			return 1
		}
		return 0
	}
	log, err := attachAuditLog(ctx, js, nil)
	if err != nil {
		fmt.Fprintf(stderr, "controller audit %s: %v\n", sub, err)
		return 1
	}
	switch sub {
	case "state":
		err = auditState(ctx, log, *gen, stdout)
	case "history":
		err = auditHistory(ctx, log, *group, *backend, stdout)
	case "export":
		err = auditExport(ctx, log, *from, *to, stdout)
	default:
		fmt.Fprintf(stderr, "controller audit: unknown subcommand %q\n%s\n", sub, auditUsage)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "controller audit %s: %v\n", sub, err)
		return 1
	}
	return 0
}

// openAuditJetStream connects to the fleet's NATS (url, or an embedded
// node opened on a stopped controller's dataDir) and returns its
// JetStream and the func that closes the connection (and the node).
func openAuditJetStream(url, dataDir string, access natsnode.Access) (jetstream.JetStream, func(), error) {
	stop := func() {}
	if url == "" && dataDir != "" {
		node, err := natsnode.Start(&natsnode.Options{DataDir: filepath.Join(dataDir, "nats"), Listen: "127.0.0.1:0", Auth: true})
		if err != nil {
			return nil, nil, fmt.Errorf("open stopped fleet in %s: %w", dataDir, err)
		}
		url, stop = node.ClientURL(), node.Shutdown
		access = node.ControllerAccess()
	}
	if url == "" {
		url = nats.DefaultURL
	}
	opts, err := access.Options()
	if err != nil {
		stop()
		return nil, nil, err
	}
	nc, err := nats.Connect(url, append(opts, nats.Name("fleetgate-audit"))...)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("connect NATS %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		stop()
		return nil, nil, fmt.Errorf("JetStream on %s: %w", url, err)
	}
	return js, func() { nc.Close(); stop() }, nil
}

// openAuditLog opens the single-region fleet's event log (events tail).
func openAuditLog(ctx context.Context, url, dataDir string, access natsnode.Access) (*events.Log, func(), error) {
	js, closeJS, err := openAuditJetStream(url, dataDir, access)
	if err != nil {
		return nil, nil, err
	}
	log, err := attachAuditLog(ctx, js, nil)
	if err != nil {
		closeJS()
		return nil, nil, err
	}
	return log, closeJS, nil
}

// attachAuditLog attaches the existing log o names (nil: the single-region
// log), waiting at most 10 s for it to exist.
// With an edge's credential on a server that splits the accounts it reads
// the log through the fleet account's read services, by sequence.
func attachAuditLog(ctx context.Context, js jetstream.JetStream, o *events.LogOptions) (*events.Log, error) {
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	lo := events.LogOptions{}
	if o != nil {
		lo = *o
	}
	fjs, split, err := natsnode.FleetJetStream(actx, js.Conn(), lo.Stream)
	if err != nil {
		return nil, err
	}
	lo.BySequence = split
	return events.AttachLog(actx, fjs, &lo)
}

func auditState(ctx context.Context, log *events.Log, gen uint64, out io.Writer) error {
	if gen == 0 {
		return errors.New("--generation is required (generations start at 1)")
	}
	var skipped []string
	s, err := log.Replay(ctx, gen, func(err error) { skipped = append(skipped, err.Error()) })
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		*events.State
		Views   map[string]auditView `json:"views"`
		Skipped []string             `json:"skipped_events,omitempty"`
	}{s, auditViews(s), skipped})
}

// auditViews are the views of every group of s.
func auditViews(s *events.State) map[string]auditView {
	views := map[string]auditView{}
	for _, name := range s.GroupNames() {
		v := fromstate.View(s.Group(name), "", nil)
		av := auditView{Digest: v.Digest, Tools: []string{}, Collisions: v.Collisions}
		for _, t := range v.Tools {
			av.Tools = append(av.Tools, t.Exposed)
		}
		views[name] = av
	}
	return views
}

// auditView is what a passthrough edge of a group serves at the audited
// generation: the registry digest, the exposed tool names and the name
// collisions (a log without naming events is named with the prefix
// strategy and the default separator).
type auditView struct {
	Digest     string              `json:"digest"`
	Tools      []string            `json:"tools"`
	Collisions []catalog.Collision `json:"collisions"`
}

// Transition is one line of audit history.
type Transition struct {
	Generation uint64    `json:"generation"`
	Time       time.Time `json:"time"`
	Group      string    `json:"group"`
	Kind       string    `json:"kind"`
	Detail     string    `json:"detail"`
}

func auditHistory(ctx context.Context, log *events.Log, group, backend string, out io.Writer) error {
	if backend == "" {
		return errors.New("--backend is required")
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return eachEvent(ctx, log, 0, 0, func(e events.EventJSON) error {
		if e.Backend != backend || (group != "" && e.Group != group) {
			return nil
		}
		t := Transition{Generation: e.Generation, Time: e.Time, Group: e.Group, Kind: e.Kind}
		switch {
		case e.Health != nil:
			t.Detail = fmt.Sprintf("%s -> %s advertisable=%v %s", e.Health.From, e.Health.To, e.Health.Advertisable, e.Health.Reason)
		case e.Catalog != nil:
			t.Detail = fmt.Sprintf("%d tools digest %s", len(e.Catalog.Tools), e.Catalog.Digest)
		case e.Config != nil:
			t.Detail = e.Config.URL + " (" + e.Config.Transport + ")"
		}
		return enc.Encode(t)
	})
}

func auditExport(ctx context.Context, log *events.Log, from, to uint64, out io.Writer) error {
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return eachEvent(ctx, log, from, to, func(e events.EventJSON) error { return enc.Encode(e) })
}

// eachEvent walks events from..to (0: the log's first and last) in pages.
func eachEvent(ctx context.Context, log *events.Log, from, to uint64, fn func(events.EventJSON) error) error {
	first, last, err := log.Bounds(ctx)
	if err != nil {
		return err
	}
	if from == 0 {
		from = first
	}
	if to == 0 || to > last {
		to = last
	}
	for next := from; next <= to; {
		page, err := log.Events(ctx, next, int(min(to-next+1, 1000)))
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
		}
		next = page[len(page)-1].Generation + 1
	}
	return nil
}
