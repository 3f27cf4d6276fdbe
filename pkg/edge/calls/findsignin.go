package calls

import (
	"cmp"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// In optimizer mode a user_oauth backend the caller has not signed in to
// is found by find_tool as its sign-in tool (never with before_sign_in:
// hidden): the caller's search runs over the backend's tools as well, and
// each of its tools found is replaced by the backend's sign-in tool, at
// the best score of those; a query naming the backend finds it too.
// call_tool calls a sign-in tool, and answers a call of the backend's
// tools with the sign-in URL, as tools/call does in passthrough mode
// (optimizer.go). Once signed in, the caller's search finds the
// backend's tools.

// findTool is find_tool for the caller of x in a session serving served.
func (pl *Plane) findTool(served *view.Served, x *mcp.RequestExtra, args json.RawMessage, rev string) *mcp.CallToolResult {
	pv := pl.policyView(served, x)
	sv := pl.signInView(pv, TokenInfoOf(x))
	res := pl.FindTool(sv, args, rev)
	if sv == pv || res.IsError {
		return res
	}
	signIn := map[string]*mcp.Tool{} // by backend: the sign-in tools the caller is offered
	for _, b := range pl.signInBackends(pv) {
		if t := sv.Tools[b+pl.o.Separator+SignInTool]; t != nil {
			signIn[b] = t
		}
	}
	if len(signIn) == 0 {
		return res
	}
	query, limit, _ := parseFindArgs(args) // valid: FindTool took them
	visible, ok := res.StructuredContent.(json.RawMessage)
	all, err := pv.Index.FindAt(query, limit, rev)
	if !ok || err != nil {
		return res
	}
	body, err := mergeSignIns(visible, all, pv, signIn, query, limit)
	if err != nil {
		pl.o.Log.Warn().Err(err).Msg("find_tool: the sign-in tools not merged")
		return res
	}
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(body), Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}
}

// findResult is a find_tool result, its tools kept as encoded.
type findResult struct {
	Tools          []json.RawMessage `json:"tools"`
	CatalogTools   int               `json:"catalog_tools"`
	CatalogTokens  int               `json:"catalog_tokens"`
	ReturnedTokens int               `json:"returned_tokens"`
}

type scored struct {
	raw   json.RawMessage
	score float64
}

// tokensOf is the token estimate of an encoded value (view's rule: a
// quarter of its bytes, rounded up).
func tokensOf(b []byte) int { return (len(b) + 3) / 4 }

// mergeSignIns is the visible result (the caller's search) with the
// sign-in tools of signIn: each at the best score of its backend's tools
// in all (the search over pv, those backends included), or at the top
// score when query names the backend; at most limit tools, best first.
func mergeSignIns(visible, all []byte, pv *view.Served, signIn map[string]*mcp.Tool, query string, limit int) ([]byte, error) {
	var vis, full findResult
	if err := json.Unmarshal(visible, &vis); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(all, &full); err != nil {
		return nil, err
	}
	var out []scored
	top := 0.0
	for _, raw := range vis.Tools {
		s := scoreOf(raw)
		out = append(out, scored{raw, s.Score})
		top = max(top, s.Score)
	}
	best := map[string]float64{}
	for _, raw := range full.Tools {
		s := scoreOf(raw)
		if b := pv.OwnerOf(policy.KindTool, s.Name); signIn[b] != nil {
			best[b] = max(best[b], s.Score)
		}
	}
	q := strings.ToLower(query)
	for b := range signIn {
		if _, found := best[b]; !found && strings.Contains(q, strings.ToLower(b)) {
			best[b] = max(top, 1)
		}
	}
	for _, b := range slices.Sorted(maps.Keys(best)) {
		t, score := signIn[b], best[b]
		raw, err := json.Marshal(view.FoundTool{Name: t.Name, Description: t.Description, InputSchema: view.RawSchema(t.InputSchema),
			Score: math.Round(score*1e4) / 1e4})
		if err != nil {
			return nil, err
		}
		out = append(out, scored{raw, score})
		vis.ReturnedTokens += tokensOf(raw)
	}
	for _, t := range signIn {
		if def, err := json.Marshal(t); err == nil {
			vis.CatalogTools++
			vis.CatalogTokens += tokensOf(def)
		}
	}
	slices.SortStableFunc(out, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	if len(out) > limit {
		for _, s := range out[limit:] {
			vis.ReturnedTokens -= tokensOf(s.raw)
		}
		out = out[:limit]
	}
	vis.ReturnedTokens = max(vis.ReturnedTokens, 0)
	vis.Tools = make([]json.RawMessage, len(out))
	for i, s := range out {
		vis.Tools[i] = s.raw
	}
	return json.Marshal(vis)
}

// scoreOf reads the name and score of an encoded found tool.
func scoreOf(raw json.RawMessage) (s struct {
	Name  string  `json:"name"`
	Score float64 `json:"score"`
}) {
	_ = json.Unmarshal(raw, &s)
	return s
}
