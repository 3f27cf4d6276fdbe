package edge

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// Vocabulary of the synthetic catalogs: every service is a backend with
// tools named <verb>_<object>.
var (
	synthServices = []string{"github", "gitlab", "slack", "teams", "jira", "linear", "calendar", "drive", "dropbox",
		"gmail", "outlook", "s3", "gcs", "postgres", "mysql", "redis", "stripe", "paypal", "zendesk", "intercom",
		"hubspot", "salesforce", "notion", "confluence", "asana", "trello", "figma", "sentry", "datadog", "pagerduty",
		"twilio", "sendgrid", "shopify", "airtable", "box", "zoom", "okta", "vault", "k8s", "docker"}
	synthVerbs   = []string{"list", "get", "create", "update", "delete", "search", "archive", "export", "share", "move", "restore", "comment"}
	synthObjects = []string{"issue", "message", "channel", "file", "folder", "event", "invoice", "customer", "ticket",
		"user", "repository", "branch", "page", "task", "project", "order", "payment", "record", "alert", "incident",
		"deployment", "secret", "meeting", "contact", "report"}
	synthSentences = []string{"Returns the result as JSON.", "Requires write access.", "Results are paginated.",
		"Only items visible to the caller are included.", "Supports filtering by owner and date.",
		"Fails if the item does not exist.", "Changes are audited.", "Use the cursor to fetch the next page."}
	synthParams = []struct{ name, desc string }{{"limit", "maximum number of items to return"},
		{"cursor", "opaque cursor from a previous page"}, {"query", "free-text search terms"},
		{"since", "only items changed after this timestamp"}, {"owner", "user who owns the item"},
		{"tags", "labels to attach or filter by"}, {"format", "output format: json, csv or markdown"},
		{"title", "human readable title"}, {"body", "text content in markdown"}, {"due_date", "date the item is due"}}
	// synthQueries are what agents would ask for.
	synthQueries = []string{"create a new issue in github", "send a message to a slack channel", "list invoices for a customer",
		"delete a file from drive", "search tickets by keyword", "schedule a meeting in the calendar",
		"export a report as csv", "restore an archived page in notion", "get the details of a payment",
		"move a task to another project", "who owns this repository", "share a folder with a user",
		"update a contact in hubspot", "list recent incidents", "archive old messages", "comment on a pull request branch"}
)

// synthCatalogs returns a deterministic catalog of n tools spread over
// backends of 250 tools each (at most 40 backends), as backend name to
// tool definitions.
func synthCatalogs(n int, seed uint64) map[string][]json.RawMessage {
	r := rand.New(rand.NewPCG(seed, 0))
	if n > 250*len(synthServices) {
		panic("synthCatalogs: too many tools")
	}
	out := map[string][]json.RawMessage{}
	per := len(synthVerbs) * len(synthObjects)
	for i := range n {
		svc := synthServices[(i/250)%len(synthServices)]
		k := i % 250
		c := (k * 7) % per // 7 is prime to per: distinct combinations within a backend
		verb, obj := synthVerbs[c%len(synthVerbs)], synthObjects[c/len(synthVerbs)]
		name := verb + "_" + obj
		desc := fmt.Sprintf("%s %s %s in %s. %s %s", strings.ToUpper(verb[:1])+verb[1:], article(obj), obj, svc,
			synthSentences[r.IntN(len(synthSentences))], synthSentences[r.IntN(len(synthSentences))])
		props := map[string]any{obj + "_id": map[string]any{"type": "string", "description": "ID of the " + obj}}
		for range 1 + r.IntN(3) {
			p := synthParams[r.IntN(len(synthParams))]
			props[p.name] = map[string]any{"type": "string", "description": p.desc}
		}
		def := map[string]any{"name": name, "description": desc,
			"inputSchema": map[string]any{"type": "object", "properties": props, "required": []string{obj + "_id"}}}
		if r.IntN(3) == 0 {
			def["title"] = strings.ToUpper(verb[:1]) + verb[1:] + " " + obj + " (" + svc + ")"
		}
		b, err := json.Marshal(def)
		if err != nil {
			panic(err)
		}
		out[svc] = append(out[svc], b)
	}
	return out
}

func article(w string) string {
	if strings.ContainsRune("aeiou", rune(w[0])) {
		return "an"
	}
	return "a"
}

// servedOf builds the served value of a group of advertisable backends with
// the given tool definitions, as the resync loop would after prev.
func servedOf(t testing.TB, gen uint64, cats map[string][]json.RawMessage, prev *view.Served) *view.Served {
	t.Helper()
	g := &events.Group{Name: "default", Backends: map[string]*events.Backend{}}
	for name, tools := range cats {
		d, err := catalog.Digest(tools)
		if err != nil {
			t.Fatal(err)
		}
		g.Backends[name] = &events.Backend{Name: name, Group: "default", Advertisable: true, Status: "healthy",
			Config: events.BackendConfig{URL: "http://127.0.0.1:1/mcp"}, Catalog: &events.Catalog{Tools: tools, Digest: d}}
	}
	if prev == nil {
		prev = view.Empty()
	}
	sv := view.Build(gen, g, "_", prev)
	if len(sv.Dropped) > 0 {
		t.Fatalf("dropped: %v", sv.Dropped)
	}
	return sv
}

// toolDef is a minimal tool definition.
func toolDef(name, desc string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"name": name, "description": desc,
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}})
	return b
}

// decodeFind decodes a find_tool result and checks that its text content
// is the same JSON as its structured content.
func decodeFind(t testing.TB, res *mcp.CallToolResult) view.FindResult {
	t.Helper()
	if res.IsError {
		t.Fatalf("find_tool: isError: %s", text(res))
	}
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var fromStruct, fromText view.FindResult
	if err := json.Unmarshal(sc, &fromStruct); err != nil {
		t.Fatalf("structuredContent %s: %v", sc, err)
	}
	if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
		t.Fatalf("text content %q: %v", text(res), err)
	}
	a, _ := json.Marshal(fromStruct)
	b, _ := json.Marshal(fromText)
	if string(a) != string(b) {
		t.Fatalf("text content differs from structuredContent:\n%s\n%s", a, b)
	}
	return fromStruct
}

// names lists the names of a find_tool result's tools.
func resultNames(r view.FindResult) []string {
	out := make([]string, len(r.Tools))
	for i, ft := range r.Tools {
		out[i] = ft.Name
	}
	return out
}
