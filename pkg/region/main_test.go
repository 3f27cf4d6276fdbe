package region

import (
	"testing"

	"go.uber.org/goleak"
)

// The nats-server's mirror consumer setup runs in a goroutine that ends
// on a timer of its own after the server shuts down, and was seen to
// outlive Shutdown in a full make test run; it is the server's, not ours.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*stream).setupMirrorConsumer.func3"))
}
