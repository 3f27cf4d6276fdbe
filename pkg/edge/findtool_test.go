package edge

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
)

var updateFindGolden = flag.Bool("update-find-golden", false, "rewrite testdata/find_tool golden files")

func TestParseFindArgs(t *testing.T) {
	for _, tc := range []struct {
		args      string
		query     string
		limit     int
		errSubstr string // empty: valid
	}{
		{`{"query":"send mail"}`, "send mail", 8, ""},
		{`{"query":"send mail","limit":3}`, "send mail", 3, ""},
		{`{"query":"send mail","limit":3.0}`, "send mail", 3, ""},
		{`{"query":"send mail","limit":null}`, "send mail", 8, ""},
		{`{"query":"send mail","limit":50}`, "send mail", 50, ""},
		{`{"query":"send mail","limit":51}`, "send mail", 50, ""}, // clamped
		{`{"query":"send mail","limit":1e6}`, "send mail", 50, ""},
		{`{"query":"x","extra":true}`, "x", 8, ""},
		{``, "", 0, `"query" is required`},
		{`{}`, "", 0, `"query" is required`},
		{`{"query":null}`, "", 0, `"query" is required`},
		{`{"query":""}`, "", 0, `"query" must not be empty`},
		{`{"query":"  \t"}`, "", 0, `"query" must not be empty`},
		{`{"query":42}`, "", 0, `"query" must be a string`},
		{`{"query":"x","limit":0}`, "", 0, `"limit" must be an integer from 1 to 50, got 0`},
		{`{"query":"x","limit":-3}`, "", 0, `"limit" must be an integer`},
		{`{"query":"x","limit":2.5}`, "", 0, `"limit" must be an integer`},
		{`{"query":"x","limit":"5"}`, "", 0, `"limit" must be an integer`},
		{`["x"]`, "", 0, "must be a JSON object"},
	} {
		q, l, err := parseFindArgs(json.RawMessage(tc.args))
		if tc.errSubstr == "" {
			if err != nil || q != tc.query || l != tc.limit {
				t.Errorf("parseFindArgs(%s) = %q, %d, %v; want %q, %d", tc.args, q, l, err, tc.query, tc.limit)
			}
			continue
		}
		if !errors.Is(err, errInvalidArguments) || !strings.Contains(err.Error(), tc.errSubstr) || !strings.HasPrefix(err.Error(), "find_tool: ") {
			t.Errorf("parseFindArgs(%s) error = %v, want one naming %s", tc.args, err, tc.errSubstr)
		}
	}
}

func TestParseCallArgs(t *testing.T) {
	for _, tc := range []struct {
		args, name, callArgs, errSubstr string
	}{
		{`{"tool_name":"alpha_echo","arguments":{"text":"hi"}}`, "alpha_echo", `{"text":"hi"}`, ""},
		{`{"tool_name":"alpha_echo"}`, "alpha_echo", ``, ""},
		{`{"tool_name":"alpha_echo","arguments":null}`, "alpha_echo", ``, ""},
		{`{}`, "", "", `"tool_name" is required`},
		{`{"tool_name":""}`, "", "", `"tool_name" is required`},
		{`{"tool_name":7}`, "", "", `"tool_name" is required`},
		{`{"tool_name":"alpha_echo","arguments":[1]}`, "", "", `call_tool "alpha_echo": invalid arguments: "arguments" must be a JSON object`},
		{`{"tool_name":"alpha_echo","arguments":"x"}`, "", "", `"arguments" must be a JSON object`},
		{`"alpha_echo"`, "", "", "must be a JSON object"},
	} {
		name, args, err := parseCallArgs(json.RawMessage(tc.args))
		if tc.errSubstr == "" {
			if err != nil || name != tc.name || string(args) != tc.callArgs {
				t.Errorf("parseCallArgs(%s) = %q, %s, %v", tc.args, name, args, err)
			}
			continue
		}
		if !errors.Is(err, errInvalidArguments) || !strings.Contains(err.Error(), tc.errSubstr) {
			t.Errorf("parseCallArgs(%s) error = %v, want one naming %s", tc.args, err, tc.errSubstr)
		}
	}
}

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
	e := &Edge{opt: newOptimizerMetrics(prometheus.NewRegistry())}
	for _, tc := range []struct{ file, args string }{
		{"send_email.golden", `{"query":"send an email to a colleague"}`},
		{"meeting_limit1.golden", `{"query":"schedule a meeting","limit":1}`},
		{"nothing.golden", `{"query":"zebra"}`},
	} {
		res := e.findTool(sv, json.RawMessage(tc.args), "")
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
