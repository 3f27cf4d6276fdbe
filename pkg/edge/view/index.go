package view

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/search"
)

// Names of the optimizer mode's meta-tools.
const (
	FindToolName = "find_tool"
	CallToolName = "call_tool"
)

// Index is the optimizer's part of one served value: the search index
// of its tools and what optimizer sessions are shown. It is built once per
// view change, in the resync loop, and shared read-only by every session
// holding that served value, so a find_tool that loaded it finishes on it
// while later views are swapped in.
type Index struct {
	ix *search.Index
	// Tools is the served toolList the index was built from: Hit.Doc
	// indexes it. tokens[i] is the estimate of Tools[i] (see tokenCount).
	Tools         []*mcp.Tool
	defs          []json.RawMessage // defs[i]: the definition of Tools[i] the view holds
	tokens        []int
	catalogTokens int
	// Advertised is tools/list in optimizer mode: the meta-tools and the
	// pinned tools the view holds, sorted by name.
	Advertised []*mcp.Tool
	Built      time.Duration // how long building took
	// visible, when set (Served.Filter), is the caller's visible set: Find
	// returns, and counts, only the tools it allows.
	visible func(name string) bool
}

// tokenCount is the token estimate find_tool reports: the length in bytes
// of the compact JSON encoding of a value, divided by 4 and rounded up (the
// common rule of thumb of about 4 bytes of JSON per token; no tokenizer is
// involved, so the figures compare sizes rather than bill them).
func tokenCount(jsonBytes int) int { return (jsonBytes + 3) / 4 }

// NewIndex indexes the tools of sv and works out the advertised list.
// Token estimates of tools shared (same *mcp.Tool) with prev are reused.
// pinned are exposed names; those sv does not hold are left out, and
// so are the meta-tools' own names.
func NewIndex(sv *Served, pinned []string, prev *Index) *Index {
	start := time.Now()
	ti := &Index{Tools: sv.ToolList, tokens: make([]int, len(sv.ToolList)), defs: make([]json.RawMessage, len(sv.ToolList))}
	docs := make([]search.Doc, len(sv.ToolList))
	j := 0 // merge walk over prev.tools: both lists are sorted by name
	for i, t := range sv.ToolList {
		// The group is the backend serving the tool: exposed names carry
		// no backend prefix under priority or manual naming.
		te, _ := sv.Catalog.Tool(t.Name)
		ti.defs[i] = te.Def
		docs[i] = search.Doc{Name: t.Name, Title: ToolTitle(t), Description: t.Description,
			InputSchema: RawSchema(t.InputSchema), Group: te.Backend}
		if prev != nil {
			for j < len(prev.Tools) && prev.Tools[j].Name < t.Name {
				j++
			}
			if j < len(prev.Tools) && prev.Tools[j] == t {
				ti.tokens[i] = prev.tokens[j]
			}
		}
		if ti.tokens[i] == 0 {
			if def := ti.defs[i]; def != nil {
				ti.tokens[i] = tokenCount(len(def))
			} else if b, err := json.Marshal(t); err == nil {
				ti.tokens[i] = tokenCount(len(b))
			}
		}
		ti.catalogTokens += ti.tokens[i]
	}
	ti.ix = search.Build(docs, nil)
	ti.Advertised = []*mcp.Tool{CallToolDef, FindToolDef}
	for _, name := range pinned {
		if t := sv.Tools[name]; t != nil && name != FindToolName && name != CallToolName {
			ti.Advertised = append(ti.Advertised, t)
		}
	}
	slices.SortFunc(ti.Advertised, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	ti.Advertised = slices.CompactFunc(ti.Advertised, func(a, b *mcp.Tool) bool { return a.Name == b.Name })
	ti.Built = time.Since(start)
	if st := sv.Stateless; st != nil && st.Index == nil {
		// The stateless generation's view is indexed with sv's (era.go).
		st.Index = NewIndex(st, pinned, nil)
	}
	return ti
}

// PinnedChanged reports whether optimizer sessions must be told to list
// their tools again between two served values: whether the pinned tools
// they hold differ in presence or definition. Changes to other tools only
// change the index.
func PinnedChanged(prev, next *Served) bool {
	a, b := prev.Index.Advertised, next.Index.Advertised
	if len(a) != len(b) {
		return true
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		if a[i].Name != b[i].Name {
			return true
		}
		old, ok1 := prev.Catalog.Tool(a[i].Name)
		cur, ok2 := next.Catalog.Tool(b[i].Name)
		if !ok1 || !ok2 || !bytes.Equal(old.Def, cur.Def) {
			return true
		}
	}
	return false
}

// ToolTitle is a tool's display title: Title, else the annotations' title.
func ToolTitle(t *mcp.Tool) string {
	if t.Title == "" && t.Annotations != nil {
		return t.Annotations.Title
	}
	return t.Title
}

// RawSchema returns an input schema as JSON; served tools hold it raw.
func RawSchema(s any) json.RawMessage {
	switch v := s.(type) {
	case json.RawMessage:
		return v
	case nil:
		return nil
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	return b
}

// The meta-tools. Their calls are answered by Edge.optimizer; they are
// never registered on a go-sdk server.
var (
	FindToolDef = &mcp.Tool{
		Name:  FindToolName,
		Title: "Find a tool",
		Description: "Search the tools available through this gateway by what you want to do, in plain words. " +
			"Returns the best-matching tools, best first, with their input schemas; call one with call_tool. " +
			"Search again when a tool you used is no longer available.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"query":{"type":"string","minLength":1,"description":"What the tool should do, e.g. \"create a calendar event\"."},` +
			`"limit":{"type":"integer","minimum":1,"maximum":50,"default":8,"description":"Most tools to return; 1 to 50 (larger values are clamped to 50), default 8."}},` +
			`"required":["query"]}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"tools":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"title":{"type":"string"},` +
			`"description":{"type":"string"},"inputSchema":{"type":"object"},"score":{"type":"number"},` +
			`"matched":{"type":"array","items":{"type":"string"}}},"required":["name","inputSchema","score"]}},` +
			`"catalog_tools":{"type":"integer"},"catalog_tokens":{"type":"integer"},"returned_tokens":{"type":"integer"}},` +
			`"required":["tools","catalog_tools","catalog_tokens","returned_tokens"]}`),
		Annotations: &mcp.ToolAnnotations{Title: "Find a tool", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}
	CallToolDef = &mcp.Tool{
		Name:  CallToolName,
		Title: "Call a tool",
		Description: "Call a tool found with find_tool: tool_name is its name, arguments an object matching its inputSchema. " +
			"Returns the tool's own result.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{` +
			`"tool_name":{"type":"string","minLength":1,"description":"The tool's name as find_tool returned it."},` +
			`"arguments":{"type":"object","description":"The tool's arguments; default {}."}},` +
			`"required":["tool_name"]}`),
		Annotations: &mcp.ToolAnnotations{Title: "Call a tool"},
	}
)
