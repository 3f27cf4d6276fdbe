package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/controller"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
	"github.com/fleetgate/fleetgate/pkg/edge"
)

// namingYAML is a fleet of alpha, beta and gamma under conflicts (priority
// or manual) with the rules of each backend given as YAML lines.
func namingYAML(conflicts string, backends []*demobackend.Backend, rules map[string]string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "aggregation:\n  separator: \"_\"\n  conflicts: %s\ngroups:\n  - name: default\n    backends:\n", conflicts)
	for _, b := range backends {
		fmt.Fprintf(&sb, "      - name: %s\n        url: %s\n", b.Name(), b.URL())
		if r := rules[b.Name()]; r != "" {
			sb.WriteString(r)
		}
	}
	sb.WriteString("health:\n  interval: 200ms\n  timeout: 100ms\n  unhealthy_after: 2\n  debounce: 200ms\n")
	return sb.String()
}

// startEdgeWith runs an edge whose own --separator disagrees with the
// fleet's: the names must come from the event log.
func startEdgeWith(t *testing.T, natsURL string) *edge.Edge {
	t.Helper()
	return startEdgeOn(t, natsURL, nil, edge.Options{Coalesce: 100 * time.Millisecond, Separator: "-"})
}

// The priority strategy end to end: two backends both offer echo; the one
// listed first keeps the bare name, the other is prefixed; calls reach the
// right backend; include, exclude and rename rules and prompt renames are
// what a client sees; the controller's view, /v1/state and the edge agree.
// Then manual: a reload and a PUT that would collide are refused, naming
// both backends.
func TestNamingPriorityEndToEnd(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	gamma := startBackend(t, "gamma", nil)
	gamma.AddTool(&mcp.Tool{Name: "secret", InputSchema: json.RawMessage(`{"type":"object"}`)})
	backends := []*demobackend.Backend{alpha, beta, gamma}
	rules := map[string]string{
		"alpha": "        resources:\n          rename: {\"demo://alpha/readme\": \"docs://alpha/readme\"}\n",
		"beta":  "        prompts:\n          rename: {greet: hello}\n",
		"gamma": "        tools:\n          include: [\"echo\", \"a*\"]\n          exclude: [\"add\"]\n          rename: {echo: shout}\n" +
			"        resources:\n          exclude: [\"demo://gamma/*\"]\n",
	}
	c := startController(t, node.ClientURL(), "c1", namingYAML("priority", backends, rules))
	e := startEdgeWith(t, node.ClientURL())
	cl := connectMCP(t, e.MCPURL(), "")
	want := []string{"add", "beta_add", "beta_echo", "echo", "shout"}
	eventually(t, 20*time.Second, "the three backends' tools", func() bool { return slices.Equal(sorted(cl.tools(t)), want) })

	for name, reply := range map[string]string{"echo": "alpha: hi", "beta_echo": "beta: hi", "shout": "gamma: hi"} {
		res, err := cl.call(name, map[string]any{"text": "hi"})
		if err != nil || res.IsError || text(res) != reply {
			t.Errorf("call %s: %q, %v (isError %v); want %q", name, text(res), err, res != nil && res.IsError, reply)
		}
	}
	if res, err := cl.call("gamma_secret", nil); err == nil && !res.IsError {
		t.Errorf("a tool gamma's include leaves out is callable: %q", text(res))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var prompts, resources []string
	for p, err := range cl.cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	for r, err := range cl.cs.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		resources = append(resources, r.URI)
	}
	if got, want := sorted(prompts), []string{"gamma_greet", "greet", "hello"}; !slices.Equal(got, want) {
		t.Errorf("prompts %v, want %v", got, want)
	}
	if got, want := sorted(resources), []string{"demo://beta/readme", "docs://alpha/readme"}; !slices.Equal(got, want) {
		t.Errorf("resources %v, want %v", got, want)
	}
	// A renamed resource is read by its exposed URI: the edge asks the
	// backend for its own, and answers with the exposed one.
	rr, err := cl.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "docs://alpha/readme"})
	if err != nil || len(rr.Contents) == 0 || rr.Contents[0].URI != "docs://alpha/readme" {
		t.Errorf("renamed resource read: %+v, %v", rr, err)
	}
	pr, err := cl.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "hello"})
	if err != nil || len(pr.Messages) == 0 || pr.Messages[0].Content.(*mcp.TextContent).Text != "hello from beta" {
		t.Errorf("renamed prompt: %+v, %v", pr, err)
	}

	// The controller's view is the edge's.
	var view controller.ViewJSON
	eventually(t, 10*time.Second, "the controller's view digest", func() bool {
		httpJSON(t, "GET", c.admin+"/v1/groups/default/view", "", &view)
		return view.Digest == e.View().Digest && len(view.Tools) == len(want)
	})

	// /v1/state reports every collision and how it was settled.
	var st controller.StateJSON
	httpJSON(t, "GET", c.admin+"/v1/state", "", &st)
	if len(st.Groups) != 1 {
		t.Fatalf("state groups %+v", st.Groups)
	}
	g := st.Groups[0]
	if g.Naming.Spec == nil || g.Naming.Spec.Conflicts != "priority" || g.Naming.Generation == 0 {
		t.Errorf("naming %+v", g.Naming)
	}
	byName := map[string]controller.CollisionJSON{}
	for _, col := range g.Collisions {
		byName[col.Kind+" "+col.Name] = col
	}
	if col := byName["tool echo"]; !slices.Equal(col.Backends, []string{"alpha", "beta"}) || col.KeptBy != "alpha" ||
		col.Resolution != "prefixed" || len(col.Others) != 1 || col.Others[0].Exposed != "beta_echo" {
		t.Errorf("echo collision %+v", col)
	}
	if col := byName["tool add"]; col.KeptBy != "alpha" || len(col.Others) != 1 || col.Others[0].Backend != "beta" {
		t.Errorf("add collision %+v", col)
	}
	if col := byName["prompt greet"]; col.KeptBy != "alpha" || len(col.Others) != 1 || col.Others[0].Exposed != "gamma_greet" {
		t.Errorf("greet collision %+v", col)
	}
	if len(g.Collisions) != 3 {
		t.Errorf("collisions %+v", g.Collisions)
	}

	// Manual: a reload that would collide is refused, naming both backends.
	if err := os.WriteFile(c.path, []byte(namingYAML("manual", backends, rules)), 0o644); err != nil {
		t.Fatal(err)
	}
	err = c.c.Reload(context.Background())
	if err == nil || !strings.Contains(err.Error(), `prompt name "greet" of group "default" is asked for by backend "alpha" ("greet") and backend "gamma"`) {
		t.Fatalf("manual reload with collisions: %v", err)
	}
	// With beta's and gamma's colliding names excluded it is accepted ...
	rules["beta"] = "        tools:\n          exclude: [\"echo\", \"add\"]\n        prompts:\n          rename: {greet: hello}\n"
	rules["gamma"] = "        tools:\n          include: [\"echo\"]\n          rename: {echo: shout}\n        prompts:\n          exclude: [\"*\"]\n"
	if err := os.WriteFile(c.path, []byte(namingYAML("manual", backends, rules)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.c.Reload(context.Background()); err != nil {
		t.Fatalf("manual reload without collisions: %v", err)
	}
	eventually(t, 20*time.Second, "the manual names", func() bool {
		return slices.Equal(sorted(cl.tools(t)), []string{"add", "echo", "shout"})
	})
	// ... and a PUT putting beta's echo back is a 400 naming both.
	var answer map[string]any
	code := httpJSON(t, "PUT", c.admin+"/v1/groups/default/backends/beta", fmt.Sprintf(`{"url": %q}`, beta.URL()), &answer)
	if msg, _ := answer["error"].(string); code != 400 || !strings.Contains(msg, `"alpha"`) || !strings.Contains(msg, `"beta"`) {
		t.Fatalf("PUT colliding under manual: %d %v", code, answer)
	}
	// A PUT with rules that settle it is accepted.
	code = httpJSON(t, "PUT", c.admin+"/v1/groups/default/backends/beta",
		fmt.Sprintf(`{"url": %q, "tools": {"rename": {"echo": "beta_echo", "add": "plus"}}, "prompts": {"exclude": ["*"]}}`, beta.URL()), &answer)
	if code != 200 {
		t.Fatalf("PUT with renames: %d %v", code, answer)
	}
	eventually(t, 20*time.Second, "beta's renamed tools", func() bool {
		return slices.Equal(sorted(cl.tools(t)), []string{"add", "beta_echo", "echo", "plus", "shout"})
	})
	if res, err := cl.call("plus", map[string]any{"a": 2, "b": 3}); err != nil || text(res) != "5" {
		t.Errorf("call plus: %q, %v", text(res), err)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
