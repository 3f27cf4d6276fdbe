// Package natsnode runs NATS servers with JetStream inside the process: the
// single node the controller embeds when no external NATS URL is given, and a
// loopback cluster for tests that need replicated streams.
//
//	node, err := natsnode.Start(&natsnode.Options{DataDir: dir, Listen: "127.0.0.1:4222"})
//	if err != nil { ... }
//	defer node.Shutdown()
//	nc, err := nats.Connect(node.ClientURL())
//
// # Access
//
// With Options.Auth the node refuses unauthenticated connections and has
// two nkey users, whose seeds it keeps in DataDir: the controller (every
// right) and edges (EdgePermissions: read the event stream and snapshots,
// read and write session records, publish the call trail; their replies
// under EdgeInboxPrefix). Access turns the --nats-* flags of the commands
// into connection options, for the embedded node and for an external
// cluster alike.
//
// # Regions
//
// In a multi-region fleet each region's node has its own JetStream domain
// (Options.Domain) and the regions' nodes are joined by leaf connections
// (Options.Leaf). A node that accepts them with Auth accepts one leaf user,
// whose seed it keeps as DataDir/leaf.seed; the dialling node presents a
// copy (LeafOptions.RemoteSeed). Application subjects (LinkDeny) never cross
// a link; JetStream mirrors do. Options.EdgeLogs gives edges read rights on
// the regional logs and their mirrors.
package natsnode
