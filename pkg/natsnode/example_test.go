package natsnode_test

import (
	"fmt"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/fleetgate/fleetgate/pkg/natsnode"
)

// An authenticated embedded node: an edge connects with the edge seed the
// node wrote and its own inbox prefix.
func ExampleStart() {
	dir, _ := os.MkdirTemp("", "natsnode-example-")
	defer os.RemoveAll(dir)
	node, err := natsnode.Start(&natsnode.Options{DataDir: dir, Listen: "127.0.0.1:0", Auth: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Shutdown()
	_, err = nats.Connect(node.ClientURL())
	fmt.Println("without credentials refused:", err != nil)
	opts, _ := node.EdgeAccess().Options()
	nc, err := nats.Connect(node.ClientURL(), opts...)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	fmt.Println("edge connected:", nc.IsConnected())
	// Output:
	// without credentials refused: true
	// edge connected: true
}
