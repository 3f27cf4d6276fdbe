package leader_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetgate/fleetgate/pkg/leader"
	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

func Example() {
	dir, _ := os.MkdirTemp("", "leader-example")
	defer os.RemoveAll(dir)
	node, err := natsnode.Start(&natsnode.Options{DataDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Shutdown()
	nc, err := nats.Connect(node.ClientURL())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)

	el, err := leader.New(js, "controller-1", &leader.Options{
		TTL:    time.Second,
		OnLost: func(term uint64) { fmt.Println("term ended") },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- el.Run(ctx) }()

	lead, term, err := el.Await(ctx) // blocks until elected
	if err != nil {
		fmt.Println(err)
		return
	}
	_, ok := el.Leader()
	fmt.Println("leading:", ok, "term > 0:", term > 0)

	cancel() // Run releases the lease, reports OnLost and returns
	fmt.Println("Run:", <-done)
	<-lead.Done() // leader duties stop with the term
	_, ok = el.Leader()
	fmt.Println("leading:", ok)
	// Output:
	// leading: true term > 0: true
	// term ended
	// Run: <nil>
	// leading: false
}
