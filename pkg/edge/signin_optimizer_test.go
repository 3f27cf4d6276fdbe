package edge

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// TestSignInOptimizer: in optimizer mode a user_oauth backend the user
// has not signed in to is found by find_tool as its sign-in tool (by
// what its tools do, or by its name), never its tools; call_tool calls
// the sign-in tool and answers a call of the backend's tools with the
// sign-in URL. After sign-in find_tool finds the backend's tools and
// call_tool reaches them with the user's token. With before_sign_in:
// hidden find_tool finds nothing of the backend.
func TestSignInOptimizer(t *testing.T) {
	sf := startSignInFleetWith(t, "", func(o *Options) { o.Mode = ModeOptimizer })
	alice := sf.user(t, "alice")
	if names := alice.toolNames(t); len(names) != 2 || !names[FindToolName] || !names[CallToolName] {
		t.Fatalf("tools/list: %v", names)
	}
	found := resultNames(alice.find(t, "whoami", FindToolMaxLimit))
	if !slices.Contains(found, "docs_sign_in") || slices.Contains(found, "docs_whoami") {
		t.Fatalf("find_tool before sign-in: %v", found)
	}
	if found := resultNames(alice.find(t, "docs", 1)); len(found) != 1 || found[0] != "docs_sign_in" {
		t.Fatalf("find_tool naming the backend: %v", found)
	}
	if res := alice.callVia(t, "docs_whoami", nil); !res.IsError || !strings.Contains(text(res), "Sign in to docs") {
		t.Fatalf("call_tool of a docs tool before sign-in: %q", text(res))
	}
	res := alice.callVia(t, "docs_sign_in", nil)
	if res.IsError || !urlPattern.MatchString(text(res)) {
		t.Fatalf("call_tool docs_sign_in: %q", text(res))
	}
	if code := sf.browse(t, res, "alice@docs"); code != http.StatusOK {
		t.Fatalf("callback %d", code)
	}
	eventually(t, 20*time.Second, "find_tool finds docs_whoami", func() bool {
		found := resultNames(alice.find(t, "whoami", FindToolMaxLimit))
		return slices.Contains(found, "docs_whoami") && !slices.Contains(found, "docs_sign_in")
	})
	if res := alice.callVia(t, "docs_whoami", nil); res.IsError || text(res) != "alice@docs" {
		t.Fatalf("call_tool docs_whoami: %q", text(res))
	}

	hidden := startSignInFleetWith(t, credential.BeforeSignInHidden, func(o *Options) { o.Mode = ModeOptimizer })
	bob := hidden.user(t, "bob")
	for _, q := range []string{"whoami", "docs"} {
		for _, name := range resultNames(bob.find(t, q, FindToolMaxLimit)) {
			if strings.HasPrefix(name, "docs_") {
				t.Fatalf("hidden backend found for %q: %s", q, name)
			}
		}
	}
}
