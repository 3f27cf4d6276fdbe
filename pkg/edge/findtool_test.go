package edge

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/edge/calls"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

var updateFindGolden = flag.Bool("update-find-golden", false, "rewrite testdata/find_tool golden files")

// The find_tool result of a fixed catalog, at the handler level, matches
// the golden file (tools best first, titles where present, token figures).
func TestFindToolResultGolden(t *testing.T) {
	cats := map[string][]json.RawMessage{
		"mail": {
			json.RawMessage(`{"name":"send","title":"Send an email","description":"Send an email message to one or more recipients.","inputSchema":{"type":"object","properties":{"to":{"type":"string","description":"recipient address"},"subject":{"type":"string"}},"required":["to"]}}`),
			json.RawMessage(`{"name":"search","description":"Search the mailbox for messages matching a query.","inputSchema":{"type":"object","properties":{"query":{"type":"string"}}}}`),
		},
		"cal": {
			json.RawMessage(`{"name":"create_event","description":"Create a calendar event with attendees.","inputSchema":{"type":"object","properties":{"title":{"type":"string"},"attendees":{"type":"array","items":{"type":"string","description":"email address"}}}}}`),
		},
	}
	sv := servedOf(t, 1, cats, nil)
	sv.Index = view.NewIndex(sv, nil, nil)
	pl := calls.New(calls.Options{Optimizer: true})
	for _, tc := range []struct{ file, args string }{
		{"send_email.golden", `{"query":"send an email to a colleague"}`},
		{"meeting_limit1.golden", `{"query":"schedule a meeting","limit":1}`},
		{"nothing.golden", `{"query":"zebra"}`},
	} {
		res := pl.FindTool(sv, json.RawMessage(tc.args), "")
		got := decodeFind(t, res)
		body, _ := json.MarshalIndent(got, "", "  ")
		path := filepath.Join("testdata", "find_tool", tc.file)
		if *updateFindGolden {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, append(body, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update-find-golden to create it)", err)
		}
		if strings.TrimSpace(string(want)) != string(body) {
			t.Errorf("%s: find_tool %s =\n%s\nwant\n%s", tc.file, tc.args, body, want)
		}
		if got.CatalogTools != 3 || got.CatalogTokens <= 0 || got.ReturnedTokens > got.CatalogTokens {
			t.Errorf("%s: token figures %+v", tc.file, got)
		}
	}
}

// catalogTokens is the sum of the tools' JSON sizes as tools/list serves
// them, /4 rounded up each; returned_tokens the same over the hits.
func TestFindToolTokenCounting(t *testing.T) {
	sv := servedOf(t, 1, map[string][]json.RawMessage{"a": {toolDef("one", "first tool"), toolDef("two", "second tool")}}, nil)
	ti := view.NewIndex(sv, nil, nil)
	total := 0
	for _, tool := range sv.ToolList {
		b, _ := json.Marshal(tool)
		total += (len(b) + 3) / 4
	}
	var got view.FindResult
	body, err := ti.Find("second", 8)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(sv.Tools["a_two"])
	if got.CatalogTokens != total || len(got.Tools) != 1 || got.ReturnedTokens != (len(b)+3)/4 {
		t.Fatalf("catalog %d (want %d), returned %d (want %d) for %v", got.CatalogTokens, total, got.ReturnedTokens, (len(b)+3)/4, resultNames(got))
	}
}

// Which view changes notify optimizer sessions: only those of the pinned
// tools' presence or definition.
func TestPinnedChanged(t *testing.T) {
	base := map[string][]json.RawMessage{"a": {toolDef("echo", "echo"), toolDef("add", "add")}, "b": {toolDef("echo", "echo")}}
	with := func(mut func(m map[string][]json.RawMessage)) map[string][]json.RawMessage {
		m := map[string][]json.RawMessage{}
		for k, v := range base {
			m[k] = append([]json.RawMessage(nil), v...)
		}
		mut(m)
		return m
	}
	pinned := []string{"a_echo", "find_tool"}
	for _, tc := range []struct {
		name string
		next map[string][]json.RawMessage
		want bool
	}{
		{"unchanged", base, false},
		{"unpinned definition", with(func(m map[string][]json.RawMessage) { m["a"][1] = toolDef("add", "add numbers") }), false},
		{"unpinned backend gone", with(func(m map[string][]json.RawMessage) { delete(m, "b") }), false},
		{"unpinned tool added", with(func(m map[string][]json.RawMessage) { m["b"] = append(m["b"], toolDef("new", "n")) }), false},
		{"pinned definition", with(func(m map[string][]json.RawMessage) { m["a"][0] = toolDef("echo", "echo loudly") }), true},
		{"pinned backend gone", with(func(m map[string][]json.RawMessage) { delete(m, "a") }), true},
		{"pinned tool removed", with(func(m map[string][]json.RawMessage) { m["a"] = m["a"][1:] }), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := servedOf(t, 1, base, nil)
			prev.Index = view.NewIndex(prev, pinned, nil)
			next := servedOf(t, 2, tc.next, prev)
			next.Index = view.NewIndex(next, pinned, prev.Index)
			if got := view.PinnedChanged(prev, next); got != tc.want {
				t.Fatalf("pinnedChanged = %v, want %v", got, tc.want)
			}
			// And back: a pinned tool reappearing notifies too.
			back := servedOf(t, 3, base, next)
			back.Index = view.NewIndex(back, pinned, next.Index)
			if got := view.PinnedChanged(next, back); got != tc.want {
				t.Fatalf("pinnedChanged back = %v, want %v", got, tc.want)
			}
		})
	}
}

// The advertised list is the meta-tools plus the pinned tools the view
// holds, sorted by name; a pinned name shadowing a meta-tool is ignored.
func TestAdvertisedTools(t *testing.T) {
	sv := servedOf(t, 1, map[string][]json.RawMessage{"a": {toolDef("echo", "e"), toolDef("add", "a")}, "find": {toolDef("tool", "f")}}, nil)
	ti := view.NewIndex(sv, []string{"a_echo", "zz_missing", "find_tool", "a_echo", "a_add"}, nil)
	var names []string
	for _, tool := range ti.Advertised {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, ","); got != "a_add,a_echo,call_tool,find_tool" {
		t.Fatalf("advertised %s", got)
	}
	if ti.Advertised[3] != view.FindToolDef || ti.Advertised[1] != sv.Tools["a_echo"] {
		t.Fatal("advertised tools are not the meta-tool and the view's own values")
	}
}
