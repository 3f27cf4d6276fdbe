package edge

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if goroutines outlive its tests: every
// stream, flusher, reader and session goroutine must end with its edge.
func TestMain(m *testing.M) {
	if os.Getenv("FLEETGATE_HELPER_URL") != "" {
		os.Exit(m.Run()) // the benchmarks' client fleet process
	}
	// A demo backend closed while clients still held sessions on it keeps
	// those server-side sessions (nobody can DELETE them any more): their
	// goroutines belong to the backend's go-sdk server, not the edge.
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/modelcontextprotocol/go-sdk/mcp.(*streamableServerConn).Read"))
}
