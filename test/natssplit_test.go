package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/edgestatus"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// splitFleet is a fleet NATS with the two accounts: where to connect and
// as whom.
type splitFleet struct {
	url                  string
	controller, ctlEdges natsnode.Access
	edge, edge2          natsnode.Access
	replicas             int
}

// provisionSplit is what the controller does at start: the event log (a
// few events and a snapshot) and the leader lease in the fleet account, the
// session bucket and the call trail in the edge account.
func provisionSplit(t *testing.T, ctx context.Context, f splitFleet) (jetstream.JetStream, *events.Writer) {
	t.Helper()
	_, jsCtl := connectAs(t, f.url, f.controller)
	_, jsCtlEdges := connectAs(t, f.url, f.ctlEdges)
	lg, err := events.OpenLog(ctx, jsCtl, &events.LogOptions{Replicas: f.replicas})
	if err != nil {
		t.Fatal(err)
	}
	if err := sessionstore.Provision(ctx, jsCtlEdges, &sessionstore.ProvisionOptions{Replicas: f.replicas}); err != nil {
		t.Fatal(err)
	}
	if err := calltrail.Provision(ctx, jsCtlEdges, &calltrail.Options{Replicas: f.replicas}); err != nil {
		t.Fatal(err)
	}
	if err := edgestatus.Provision(ctx, jsCtlEdges, f.replicas); err != nil {
		t.Fatal(err)
	}
	leader, err := jsCtl.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: natsnode.LeaderBucket, Replicas: f.replicas})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Put(ctx, "leader", []byte("c1")); err != nil {
		t.Fatal(err)
	}
	w, err := events.NewWriter(ctx, lg, "c1")
	if err != nil {
		t.Fatal(err)
	}
	s := events.NewState()
	for i, ev := range []*eventspb.Event{
		events.NewBackendAdded(time.Now(), "default", "alpha", events.BackendConfig{URL: "http://127.0.0.1:1/mcp"}),
		events.NewHealthChanged(time.Now(), "default", "alpha", "unknown", "healthy", true, "probe succeeded"),
	} {
		if _, err := w.Publish(ctx, ev, fmt.Sprintf("e%d", i)); err != nil {
			t.Fatal(err)
		}
		if s, err = events.Apply(s, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := lg.SaveSnapshot(ctx, s); err != nil {
		t.Fatal(err)
	}
	return jsCtl, w
}

// attackAsEdge runs, with an edge's credential, every JetStream API an
// attacker would try against the fleet, and checks that nothing landed:
// the event log, the snapshots and the leader lease keep their messages, a
// tap on the fleet account's event subjects sees nothing, the edge's own
// reader (by sequence, through the fleet account's read services) keeps
// the controller's state, and the edge account's bucket and trail survive.
// It also checks that everything an edge does works.
func attackAsEdge(t *testing.T, f splitFleet) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	jsCtl, w := provisionSplit(t, ctx, f)

	var async asyncErrors
	nc, js := connectAs(t, f.url, f.edge, nats.ErrorHandler(async.handler))
	fjs, split, err := natsnode.FleetJetStream(ctx, nc, "")
	if err != nil || !split {
		t.Fatalf("the edge does not read through the fleet account: split %v, %v", split, err)
	}

	// What an edge does, works: follow the log by sequence, session
	// records, the call trail.
	lg, err := events.AttachLog(ctx, fjs, &events.LogOptions{BySequence: true})
	if err != nil {
		t.Fatalf("attach the event log as the edge: %v", err)
	}
	if s, err := lg.Replay(ctx, 1, nil); err != nil || s.Generation != 1 {
		t.Fatalf("replay (audit) as the edge: %v %v", s, err)
	}
	r := events.NewReader(lg, nil)
	rctx, rcancel := context.WithCancel(ctx)
	rdone := make(chan error, 1)
	go func() { rdone <- r.Run(rctx) }()
	defer func() { rcancel(); <-rdone }()
	if err := r.WaitCaughtUp(ctx); err != nil {
		t.Fatal(err)
	}
	if b := r.State().Backend("default", "alpha"); b == nil || !b.Advertisable || r.State().Generation != 2 {
		t.Fatalf("the edge's state = %+v", r.State())
	}
	// A new event reaches the edge promptly (the wake-up, not the poll).
	start := time.Now()
	if _, err := w.Publish(ctx, events.NewHealthChanged(time.Now(), "default", "alpha", "healthy", "healthy", true, "probe succeeded"), "e2"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "generation 3 on the edge", func() bool { return r.State().Generation == 3 })
	t.Logf("an event reached the edge's reader in %s", time.Since(start))

	store, err := sessionstore.Open(ctx, js, nil)
	if err != nil {
		t.Fatalf("open the session store as the edge: %v", err)
	}
	rec := &sessionstore.Record{ID: "sess-0001-abcdef", Group: "default", Mode: sessionstore.ModePassthrough,
		ProtocolVersion: "2025-06-18", CreatedAt: time.Now(), LastSeen: time.Now()}
	rev, err := store.Create(ctx, rec)
	if err != nil {
		t.Fatalf("create a session record: %v", err)
	}
	if rev, err = store.Update(ctx, rec, rev); err != nil {
		t.Fatalf("update a session record: %v", err)
	}
	trail, err := calltrail.Open(ctx, js, nil)
	if err != nil {
		t.Fatalf("open the call trail as the edge: %v", err)
	}
	tctx, tcancel := context.WithCancel(ctx)
	tdone := make(chan error, 1)
	go func() { tdone <- trail.Run(tctx) }()
	trail.Record(calltrail.Entry{Group: "default", Edge: "e1", SessionID: rec.ID, Tool: "alpha_echo", Backend: "alpha"})
	_, jsCtlEdges := connectAs(t, f.url, f.ctlEdges)
	eventually(t, 10*time.Second, "the call trail entry stored", func() bool {
		st, err := jsCtlEdges.Stream(ctx, natsnode.CallStream)
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		return err == nil && info.State.Msgs == 1
	})
	tcancel()
	<-tdone

	// The fleet account before the attack.
	count := func(js jetstream.JetStream, stream string) uint64 {
		t.Helper()
		st, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatalf("stream %s: %v", stream, err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	fleetStreams := []string{natsnode.EventStream, "KV_" + natsnode.SnapshotBucket, "KV_" + natsnode.LeaderBucket}
	before := map[string]uint64{}
	for _, s := range fleetStreams {
		before[s] = count(jsCtl, s)
	}
	// Taps in the fleet account: an operator's `nats sub '>'` and a
	// literal subscription on the subject an attacker would deliver to
	// (push consumers deliver only where something listens).
	tapNC, _ := connectAs(t, f.url, f.controller)
	tap, err := tapNC.SubscribeSync(">")
	if err != nil {
		t.Fatal(err)
	}
	alphaTap, err := tapNC.SubscribeSync("fleetgate.events.default.alpha")
	if err != nil {
		t.Fatal(err)
	}
	if err := tapNC.Flush(); err != nil {
		t.Fatal(err)
	}
	// The edge itself listens on the event subjects of its account (its
	// wake-ups): deliveries there find interest too.
	wakeTap, err := nc.SubscribeSync("fleetgate.events.default.alpha")
	if err != nil {
		t.Fatal(err)
	}

	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 700*time.Millisecond)
		t.Cleanup(cancel)
		return c
	}
	forged := events.NewBackendAdded(time.Now(), "default", "alpha", events.BackendConfig{URL: "http://attacker.example/mcp"})
	data, err := events.Encode(forged)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, natsnode.SessionBucket)
	if err != nil {
		t.Fatal(err)
	}
	// A session record holding the forged event, and one holding a
	// consumer configuration that would deliver the event log onto its
	// own subjects (a replay) if it reached the fleet account's API.
	if _, err := kv.Put(ctx, "forged-event", data); err != nil {
		t.Fatalf("an edge may write a session key: %v", err)
	}
	// The edge's status record, as package edgestatus writes it.
	statusKV, err := js.KeyValue(ctx, natsnode.EdgeStatusBucket)
	if err != nil {
		t.Fatalf("an edge may open the edges' status bucket: %v", err)
	}
	if _, err := statusKV.Put(ctx, "edge-1", []byte(`{"edge":"edge-1","updated_at":"2026-12-05T18:00:00Z","stdio":[]}`)); err != nil {
		t.Fatalf("an edge may write its status record: %v", err)
	}
	replay, _ := json.Marshal(map[string]any{"stream_name": natsnode.EventStream, "config": map[string]any{
		"deliver_subject": "fleetgate.events.default.alpha", "deliver_policy": "all", "ack_policy": "none"}})
	if _, err := kv.Put(ctx, "forged-consumer", replay); err != nil {
		t.Fatal(err)
	}

	edge2Pub, err := natsnode.PublicKey(f.edge2.NkeySeed)
	if err != nil {
		t.Fatal(err)
	}
	edge2Inbox := natsnode.InboxPrefixFor(edge2Pub)
	// Push consumers on the bucket the edge writes, delivering to foreign
	// subjects, with heartbeats and flow control (messages without a
	// body, which the JetStream API would take for empty requests).
	foreign := []string{
		"fleetgate.events.default.alpha",
		"fleetgate.events.default.evil",
		"$KV." + natsnode.LeaderBucket + ".leader",
		"$KV." + natsnode.SnapshotBucket + ".state",
		natsnode.FleetAPIPrefix + ".STREAM.MSG.GET." + natsnode.EventStream,
		natsnode.FleetAPIPrefix + ".CONSUMER.CREATE." + natsnode.EventStream + ".evil",
		"$JS.API.CONSUMER.CREATE." + natsnode.EventStream + ".evil",
		"$JS.API.STREAM.PURGE." + natsnode.EventStream,
		"$JS.API.STREAM.DELETE." + natsnode.EventStream,
		edge2Inbox + ".stolen",
	}
	edgeSessions, err := js.Stream(ctx, "KV_"+natsnode.SessionBucket)
	if err != nil {
		t.Fatal(err)
	}
	for i, subj := range foreign {
		_, err := edgeSessions.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
			Name:           fmt.Sprintf("evil%d", i),
			DeliverSubject: subj,
			DeliverPolicy:  jetstream.DeliverAllPolicy,
			AckPolicy:      jetstream.AckNonePolicy,
			FilterSubject:  "$KV." + natsnode.SessionBucket + ".forged-*",
			IdleHeartbeat:  100 * time.Millisecond,
			FlowControl:    true,
		})
		if err != nil {
			t.Logf("push consumer to %s: %v", subj, err)
		}
	}
	refusals := map[string]error{}
	// Consumers on the fleet account's streams, through the prefix or not.
	cfg, _ := json.Marshal(map[string]any{"stream_name": natsnode.EventStream, "config": map[string]any{
		"deliver_subject": "fleetgate.events.default.alpha", "ack_policy": "none"}})
	_, refusals["create a push consumer on the event log (fleet prefix)"] = nc.RequestWithContext(short(),
		natsnode.FleetAPIPrefix+".CONSUMER.CREATE."+natsnode.EventStream+".evil", cfg)
	_, refusals["create a consumer on the event log (own account)"] = js.CreateOrUpdateConsumer(short(), natsnode.EventStream,
		jetstream.ConsumerConfig{DeliverSubject: "fleetgate.events.default.alpha"})
	_, refusals["ordered consumer on the event log (fleet prefix)"] = func() (jetstream.Consumer, error) {
		st, err := fjs.Stream(ctx, natsnode.EventStream)
		if err != nil {
			return nil, err
		}
		return st.OrderedConsumer(short(), jetstream.OrderedConsumerConfig{})
	}()
	// Writes into the fleet account.
	_, refusals["publish an event (JetStream)"] = js.Publish(short(), "fleetgate.events.default.alpha", data)
	if err := nc.Publish("fleetgate.events.default.alpha", data); err != nil {
		t.Fatal(err)
	}
	_, refusals["purge the event log (fleet prefix)"] = nc.RequestWithContext(short(), natsnode.FleetAPIPrefix+".STREAM.PURGE."+natsnode.EventStream, nil)
	_, refusals["delete the event log (fleet prefix)"] = nc.RequestWithContext(short(), natsnode.FleetAPIPrefix+".STREAM.DELETE."+natsnode.EventStream, nil)
	_, refusals["write the leader lease"] = js.Publish(short(), "$KV."+natsnode.LeaderBucket+".leader", []byte("edge"))
	_, refusals["open the leader bucket (fleet prefix)"] = fjs.KeyValue(short(), natsnode.LeaderBucket)
	_, refusals["direct get of the leader key (fleet prefix)"] = nc.RequestWithContext(short(),
		natsnode.FleetAPIPrefix+".DIRECT.GET.KV_"+natsnode.LeaderBucket+".$KV."+natsnode.LeaderBucket+".leader", nil)
	_, refusals["direct get of the leader key (own account)"] = nc.RequestWithContext(short(),
		"$JS.API.DIRECT.GET.KV_"+natsnode.LeaderBucket+".$KV."+natsnode.LeaderBucket+".leader", nil)
	_, refusals["write a snapshot"] = js.Publish(short(), "$KV."+natsnode.SnapshotBucket+".state", data)
	_, refusals["write a snapshot (fleet prefix)"] = nc.RequestWithContext(short(), natsnode.FleetAPIPrefix+".$KV."+natsnode.SnapshotBucket+".state", data)
	// The edge account's own data: no roll-up, purge or delete.
	roll := &nats.Msg{Subject: "$KV." + natsnode.SessionBucket + ".zzzzzzzz", Header: nats.Header{"Nats-Rollup": []string{"all"}}}
	_, refusals["roll up the session bucket"] = js.PublishMsg(short(), roll)
	refusals["purge the session bucket"] = edgeSessions.Purge(short())
	refusals["purge a session key (roll-up)"] = kv.Purge(short(), rec.ID)
	refusals["purge the call trail"] = func() error {
		st, err := js.Stream(ctx, natsnode.CallStream)
		if err != nil {
			return err
		}
		return st.Purge(short())
	}()
	refusals["delete the call trail"] = js.DeleteStream(short(), natsnode.CallStream)
	refusals["delete the session bucket"] = js.DeleteKeyValue(short(), natsnode.SessionBucket)
	refusals["delete a consumer"] = js.DeleteConsumer(short(), "KV_"+natsnode.SessionBucket, "evil0")
	_, refusals["create a stream on the event subjects"] = js.CreateStream(short(), jetstream.StreamConfig{Name: "EVIL", Subjects: []string{"fleetgate.events.>"}})
	for what, err := range refusals {
		if err == nil {
			t.Errorf("the edge may %s", what)
		} else {
			t.Logf("refused: %s: %v", what, err)
		}
	}
	// Other clients' replies: the default inbox, another edge's, all.
	for _, subj := range []string{"_INBOX.>", edge2Inbox + ".>", natsnode.InboxPrefixFor("") + ">", ">"} {
		sub, err := nc.SubscribeSync(subj)
		if err != nil {
			continue
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		eventually(t, 5*time.Second, "subscription to "+subj+" refused", func() bool {
			return strings.Contains(async.text(), fmt.Sprintf("Subscription to %q", subj))
		})
		sub.Unsubscribe()
	}
	// The second edge, listening on its inbox, receives nothing the first
	// one sent.
	nc2, _ := connectAs(t, f.url, f.edge2)
	stolen, err := nc2.SubscribeSync(edge2Inbox + ".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc2.Flush(); err != nil {
		t.Fatal(err)
	}

	// Give the push consumers the time of many heartbeats with every
	// listener in place, then look.
	if _, err := kv.Put(ctx, "forged-event-2", data); err != nil {
		t.Fatal(err)
	}
	hb := time.Now().Add(2 * time.Second)
	for time.Now().Before(hb) {
		if m, err := tap.NextMsg(50 * time.Millisecond); err == nil {
			if strings.HasPrefix(m.Subject, "fleetgate.events.") || strings.HasPrefix(m.Subject, "$KV.") {
				t.Errorf("the fleet account saw %s (%d bytes) from the edge", m.Subject, len(m.Data))
			}
		}
	}
	if m, err := alphaTap.NextMsg(100 * time.Millisecond); err == nil {
		t.Errorf("a delivery landed on the fleet account's %s", m.Subject)
	}
	if m, err := stolen.NextMsg(100 * time.Millisecond); err == nil {
		t.Errorf("the second edge's inbox received %s from the first", m.Subject)
	}
	if _, err := wakeTap.NextMsg(100 * time.Millisecond); err == nil {
		t.Log("a push consumer delivered into the edge account's wake-up subject (a wake-up only)")
	}
	for _, s := range fleetStreams {
		if n := count(jsCtl, s); n != before[s] {
			t.Errorf("fleet stream %s went from %d to %d messages", s, before[s], n)
		}
	}
	if n := count(jsCtlEdges, natsnode.CallStream); n < 1 {
		t.Errorf("the call trail lost its entry: %d", n)
	}
	if _, _, err := store.Get(ctx, rec.ID); err != nil {
		t.Errorf("a session record was lost to the refused writes: %v", err)
	}
	// The edge's reader, woken by whatever reached its subjects, still
	// holds the controller's state: alpha at its own URL, nothing new.
	if _, err := w.Publish(ctx, events.NewHealthChanged(time.Now(), "default", "alpha", "healthy", "healthy", true, "probe succeeded"), "e3"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "generation 4 on the edge", func() bool { return r.State().Generation == 4 })
	if b := r.State().Backend("default", "alpha"); b == nil || b.Config.URL != "http://127.0.0.1:1/mcp" {
		t.Errorf("alpha on the edge is now %+v", b)
	}
	if got := count(jsCtl, natsnode.EventStream); got != 4 {
		t.Errorf("the event log holds %d events, want the controller's 4", got)
	}
}

// The embedded node (what the controller runs): two accounts, one user
// per edge; the edge credential reaches nothing of the fleet account.
func TestNATSSplitEmbedded(t *testing.T) {
	node, err := natsnode.Start(&natsnode.Options{DataDir: t.TempDir(), Listen: "127.0.0.1:0", Auth: true, EdgeUsers: []string{"e2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	attackAsEdge(t, splitFleet{url: node.ClientURL(), controller: node.ControllerAccess(), ctlEdges: node.ControllerEdgeAccess(),
		edge: node.EdgeAccess(), edge2: node.EdgeAccessFor("e2"), replicas: 1})
}

// A 3-node cluster configured as docs/limits.md tells operators: nkeys made
// with nkeys (nk -gen user), natsnode.Accounts{…}.Config() as the
// accounts section of every node's configuration, streams with 3 replicas.
func TestNATSSplitCluster(t *testing.T) {
	dir := t.TempDir()
	seed := func(name string) (natsnode.Access, string) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		s, _ := kp.Seed()
		pub, _ := kp.PublicKey()
		p := filepath.Join(dir, name+".seed")
		if err := os.WriteFile(p, s, 0o600); err != nil {
			t.Fatal(err)
		}
		return natsnode.Access{NkeySeed: p}, pub
	}
	ctl, ctlPub := seed("controller")
	ctlEdges, ctlEdgesPub := seed("controller-edges")
	e1, e1Pub := seed("edge1")
	e2, e2Pub := seed("edge2")
	conf, err := natsnode.Accounts{Controllers: []string{ctlPub}, ControllerEdges: []string{ctlEdgesPub},
		Edges: []string{e1Pub, e2Pub}}.Config()
	if err != nil {
		t.Fatal(err)
	}
	c, err := natsnode.StartClusterConfig(filepath.Join(dir, "cluster"), 3, conf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Shutdown)
	attackAsEdge(t, splitFleet{url: c.ClientURLs(), controller: ctl, ctlEdges: ctlEdges, edge: e1, edge2: e2, replicas: 3})
}
