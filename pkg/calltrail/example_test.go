package calltrail_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/calltrail"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

func Example() {
	dir, _ := os.MkdirTemp("", "calltrail-example")
	defer os.RemoveAll(dir)
	node, err := natsnode.Start(&natsnode.Options{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		panic(err)
	}
	defer node.Shutdown()
	nc, _ := nats.Connect(node.ClientURL())
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()

	trail, err := calltrail.Open(ctx, js, nil) // stream FLEETGATE_CALLS, 7 days
	if err != nil {
		panic(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- trail.Run(runCtx) }()

	// In the edge's tools/call path, after the backend answered:
	trail.Record(calltrail.Entry{
		Time: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), Group: "default", SessionID: "s1",
		Tool: "alpha_echo", BackendTool: "echo", Backend: "alpha", Generation: 7,
		Latency: 3 * time.Millisecond, Outcome: calltrail.OutcomeOK,
		Arguments: json.RawMessage(`{"text":"secret"}`), // dropped: IncludeArguments is off
	})

	stop() // shutdown: Run drains the queue, then returns
	fmt.Println(<-done, trail.Stats().Published)

	st, _ := js.Stream(ctx, calltrail.DefaultStream)
	msg, _ := st.GetMsg(ctx, 1)
	fmt.Println(msg.Subject)
	fmt.Println(string(msg.Data))
	// Output:
	// <nil> 1
	// fleetgate.calls.default
	// {"time":"2026-03-01T12:00:00Z","group":"default","session_hash":"d6430a118248c8b9","tool":"alpha_echo","backend_tool":"echo","backend":"alpha","generation":7,"latency_ns":3000000,"outcome":"ok"}
}
