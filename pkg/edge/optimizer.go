package edge

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/search"
)

// Modes of an edge (Options.Mode).
const (
	// ModePassthrough serves every tool of the group's view.
	ModePassthrough = "passthrough"
	// ModeOptimizer serves find_tool and call_tool (plus the pinned tools)
	// and answers find_tool from a search index of the view.
	ModeOptimizer = "optimizer"
)

// Names of the optimizer mode's meta-tools.
const (
	FindToolName = "find_tool"
	CallToolName = "call_tool"
)

// Limits of find_tool's "limit" argument.
const (
	FindToolDefaultLimit = search.DefaultLimit // 8, when "limit" is absent
	FindToolMaxLimit     = search.MaxLimit     // 50; larger values are clamped
)

// toolIndex is the optimizer's part of one served value: the search index
// of its tools and what optimizer sessions are shown. It is built once per
// view change, in the resync loop, and shared read-only by every session
// holding that served value, so a find_tool that loaded it finishes on it
// while later views are swapped in.
type toolIndex struct {
	ix *search.Index
	// tools is the served toolList the index was built from: Hit.Doc
	// indexes it. tokens[i] is the estimate of tools[i] (see tokenCount).
	tools         []*mcp.Tool
	tokens        []int
	catalogTokens int
	// advertised is tools/list in optimizer mode: the meta-tools and the
	// pinned tools the view holds, sorted by name.
	advertised []*mcp.Tool
	built      time.Duration // how long building took
}

// tokenCount is the token estimate find_tool reports: the length in bytes
// of the compact JSON encoding of a value, divided by 4 and rounded up (the
// common rule of thumb of about 4 bytes of JSON per token; no tokenizer is
// involved, so the figures compare sizes rather than bill them).
func tokenCount(jsonBytes int) int { return (jsonBytes + 3) / 4 }

// newToolIndex indexes the tools of sv and works out the advertised list.
// Token estimates of tools shared (same *mcp.Tool) with prev are reused.
// pinned are exposed names; those sv does not hold are left out, and
// so are the meta-tools' own names.
func newToolIndex(sv *served, pinned []string, prev *toolIndex) *toolIndex {
	start := time.Now()
	ti := &toolIndex{tools: sv.toolList, tokens: make([]int, len(sv.toolList))}
	docs := make([]search.Doc, len(sv.toolList))
	j := 0 // merge walk over prev.tools: both lists are sorted by name
	for i, t := range sv.toolList {
		docs[i] = search.Doc{Name: t.Name, Title: toolTitle(t), Description: t.Description, InputSchema: rawSchema(t.InputSchema)}
		if prev != nil {
			for j < len(prev.tools) && prev.tools[j].Name < t.Name {
				j++
			}
			if j < len(prev.tools) && prev.tools[j] == t {
				ti.tokens[i] = prev.tokens[j]
			}
		}
		if ti.tokens[i] == 0 {
			b, err := json.Marshal(t)
			if err == nil {
				ti.tokens[i] = tokenCount(len(b))
			}
		}
		ti.catalogTokens += ti.tokens[i]
	}
	ti.ix = search.Build(docs, nil)
	ti.advertised = []*mcp.Tool{callToolDef, findToolDef}
	for _, name := range pinned {
		if t := sv.tools[name]; t != nil && name != FindToolName && name != CallToolName {
			ti.advertised = append(ti.advertised, t)
		}
	}
	slices.SortFunc(ti.advertised, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	ti.advertised = slices.CompactFunc(ti.advertised, func(a, b *mcp.Tool) bool { return a.Name == b.Name })
	ti.built = time.Since(start)
	return ti
}

// pinnedChanged reports whether optimizer sessions must be told to list
// their tools again between two served values: whether the pinned tools
// they hold differ in presence or definition. Changes to other tools only
// change the index.
func pinnedChanged(prev, next *served) bool {
	a, b := prev.index.advertised, next.index.advertised
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
		old, ok1 := prev.view.Tool(a[i].Name)
		cur, ok2 := next.view.Tool(b[i].Name)
		if !ok1 || !ok2 || !bytes.Equal(old.Def, cur.Def) {
			return true
		}
	}
	return false
}

// indexView gives next its tool index in optimizer mode and returns the
// change optimizer sessions are notified of: ch without tools, unless the
// pinned tools changed. In passthrough mode it returns ch.
func (e *Edge) indexView(prev, next *served, ch change) change {
	if e.opts.Mode != ModeOptimizer {
		return ch
	}
	next.index = newToolIndex(next, e.opts.PinnedTools, prev.index)
	e.opt.indexSeconds.Set(next.index.built.Seconds())
	e.log.Debug().Int("tools", len(next.index.tools)).Dur("build", next.index.built).Msg("tool index built")
	ch.tools = pinnedChanged(prev, next)
	return ch
}

// optimizerMetrics are the optimizer mode's collectors.
type optimizerMetrics struct {
	findSeconds  prometheus.Histogram
	indexSeconds prometheus.Gauge
}

// newOptimizerMetrics registers the optimizer's collectors on reg.
func newOptimizerMetrics(reg *prometheus.Registry) *optimizerMetrics {
	m := &optimizerMetrics{
		findSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "fleetgate_edge_find_tool_seconds",
			Help:    "Time to answer a valid find_tool call: index search and result encoding.",
			Buckets: prometheus.ExponentialBuckets(0.00005, 2, 14)}),
		indexSeconds: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_edge_tool_index_build_seconds",
			Help: "Time the last tool index build took (once per view change, optimizer mode)."}),
	}
	reg.MustRegister(m.findSeconds, m.indexSeconds)
	return m
}

// toolTitle is a tool's display title: Title, else the annotations' title.
func toolTitle(t *mcp.Tool) string {
	if t.Title == "" && t.Annotations != nil {
		return t.Annotations.Title
	}
	return t.Title
}

// rawSchema returns an input schema as JSON; served tools hold it raw.
func rawSchema(s any) json.RawMessage {
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
	findToolDef = &mcp.Tool{
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
			`"description":{"type":"string"},"inputSchema":{"type":"object"},"score":{"type":"number"}},"required":["name","description","inputSchema","score"]}},` +
			`"catalog_tools":{"type":"integer"},"catalog_tokens":{"type":"integer"},"returned_tokens":{"type":"integer"}},` +
			`"required":["tools","catalog_tools","catalog_tokens","returned_tokens"]}`),
		Annotations: &mcp.ToolAnnotations{Title: "Find a tool", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}
	callToolDef = &mcp.Tool{
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
