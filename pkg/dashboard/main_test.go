package dashboard

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if goroutines outlive its tests: every
// stream, follower and session watcher ends with its dashboard. A demo
// backend stopped while the controller's prober held a session on it
// keeps that server-side session (nobody can DELETE it any more): its
// goroutine belongs to the backend's go-sdk server, not the dashboard.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/modelcontextprotocol/go-sdk/mcp.(*streamableServerConn).Read"))
}
