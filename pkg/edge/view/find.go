package view

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/fleetgate/fleetgate/pkg/search"
)

// FoundTool is one tool of a find_tool result: the tool's definition as
// the view holds it (as tools/list would serve it, at the caller's
// revision) with its score and the words of the query it matched added.
// The fields are what a reader of a result decodes; a result is encoded
// from the definition.
type FoundTool struct {
	Name        string          `json:"name"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Score       float64         `json:"score"`
	// Matched are the words of the query the tool matched, directly or
	// through a related word (search.Hit.Matched): why it was found.
	Matched []string `json:"matched,omitempty"`
	def     json.RawMessage
}

func (f FoundTool) MarshalJSON() ([]byte, error) { return f.appendJSON(nil) }

// appendJSON appends the encoding of f to dst: the definition with the
// score and matched words added, as json.Marshal would write it
// (compact, HTML-escaped), without decoding the definition.
func (f FoundTool) appendJSON(dst []byte) ([]byte, error) {
	if len(f.def) < 2 || f.def[len(f.def)-1] != '}' {
		type plain FoundTool
		b, err := json.Marshal(plain(f))
		return append(dst, b...), err
	}
	body := bytes.TrimRight(f.def[:len(f.def)-1], " \t\r\n")
	dst, err := appendCompact(dst, body) // a copy: the definition is shared
	if err != nil {
		return nil, fmt.Errorf("find_tool result of %q: %w", f.Name, err)
	}
	if dst[len(dst)-1] != '{' {
		dst = append(dst, ',')
	}
	dst = append(dst, `"score":`...)
	if dst, err = appendNumber(dst, f.Score); err != nil {
		return nil, err
	}
	if len(f.Matched) > 0 {
		dst = append(dst, `,"matched":[`...)
		for i, w := range f.Matched {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, w)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// FindResult is find_tool's structuredContent (and text content).
type FindResult struct {
	Tools []FoundTool `json:"tools"`
	// CatalogTools is the number of tools the index holds; CatalogTokens
	// their size as tools/list would serve them, ReturnedTokens that of
	// the returned ones, both estimated by tokenCount.
	CatalogTools   int `json:"catalog_tools"`
	CatalogTokens  int `json:"catalog_tokens"`
	ReturnedTokens int `json:"returned_tokens"`
}

// Find searches the index and returns the marshalled find_tool result,
// its tools' definitions as the view holds them. Scores are rounded to 4
// decimals.
func (ti *Index) Find(query string, limit int) ([]byte, error) { return ti.FindAt(query, limit, "") }

// FindAt is Find for a caller of protocol revision rev: each definition
// as rev defines it (Project).
func (ti *Index) FindAt(query string, limit int, rev string) ([]byte, error) {
	if ti.visible != nil {
		return ti.findVisible(query, limit, rev)
	}
	hits := ti.ix.Search(query, limit)
	res := FindResult{Tools: make([]FoundTool, 0, len(hits)), CatalogTools: len(ti.Tools), CatalogTokens: ti.catalogTokens}
	for _, h := range hits {
		res.add(ti, h, rev)
	}
	return res.encode()
}

// findVisible is Find over the visible tools only: the best limit of them,
// with the catalog figures of the visible tools.
func (ti *Index) findVisible(query string, limit int, rev string) ([]byte, error) {
	res := FindResult{Tools: []FoundTool{}}
	for i, t := range ti.Tools {
		if ti.visible(t.Name) {
			res.CatalogTools++
			res.CatalogTokens += ti.tokens[i]
		}
	}
	for _, h := range ti.ix.SearchFunc(query, limit, func(doc int) bool { return ti.visible(ti.Tools[doc].Name) }) {
		res.add(ti, h, rev)
	}
	return res.encode()
}

// add appends the tool of hit h, at revision rev, with its score rounded
// to 4 decimals and the query words it matched.
func (r *FindResult) add(ti *Index, h search.Hit, rev string) {
	doc := h.Doc
	t := ti.Tools[doc]
	schema := RawSchema(t.InputSchema)
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var def json.RawMessage
	if ti.defs != nil && ti.defs[doc] != nil {
		def = Project(ti.defs[doc], KindTool, rev)
	}
	r.Tools = append(r.Tools, FoundTool{Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: schema, Score: math.Round(h.Score*1e4) / 1e4, Matched: h.Matched, def: def})
	r.ReturnedTokens += ti.tokens[doc]
}

// encode is json.Marshal(r), written directly: encoding/json would
// validate and compact each definition once more.
func (r *FindResult) encode() ([]byte, error) {
	n := 96
	for _, f := range r.Tools {
		n += len(f.def) + 32 + 16*len(f.Matched)
	}
	out := append(make([]byte, 0, n), `{"tools":[`...)
	var err error
	for i, f := range r.Tools {
		if i > 0 {
			out = append(out, ',')
		}
		if out, err = f.appendJSON(out); err != nil {
			return nil, err
		}
	}
	out = strconv.AppendInt(append(out, `],"catalog_tools":`...), int64(r.CatalogTools), 10)
	out = strconv.AppendInt(append(out, `,"catalog_tokens":`...), int64(r.CatalogTokens), 10)
	out = strconv.AppendInt(append(out, `,"returned_tokens":`...), int64(r.ReturnedTokens), 10)
	return append(out, '}'), nil
}

// appendCompact appends the JSON text src as json.Marshal writes a
// Marshaler's output: compact and HTML-escaped. Text with nothing to
// change (no white space outside strings, no control bytes, no <, > or &,
// no U+2028 or U+2029), which a catalog's canonical definitions mostly
// are, is copied as is.
func appendCompact(dst, src []byte) ([]byte, error) {
	clean, inString, backslash := true, false, false
	for i, c := range src {
		switch {
		case backslash:
			backslash = false
		case c == '\\':
			backslash = inString
		case c == '"':
			inString = !inString
		case c < ' ' || c == ' ' && !inString || c == '<' || c == '>' || c == '&' ||
			c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			clean = false
		}
		if !clean {
			break
		}
	}
	if clean {
		return append(dst, src...), nil
	}
	// src is a definition without its closing brace: close it to compact
	// it, then leave the brace out again.
	var compact, escaped bytes.Buffer
	if err := json.Compact(&compact, append(slices.Clip(src), '}')); err != nil {
		return nil, err
	}
	compact.Truncate(compact.Len() - 1)
	json.HTMLEscape(&escaped, compact.Bytes())
	return append(dst, escaped.Bytes()...), nil
}

// appendNumber appends v as json.Marshal writes a float64.
func appendNumber(dst []byte, v float64) ([]byte, error) {
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) || math.IsNaN(v) || math.IsInf(v, 0) {
		b, err := json.Marshal(v)
		return append(dst, b...), err
	}
	return strconv.AppendFloat(dst, v, 'f', -1, 64), nil
}

// appendString appends s as json.Marshal writes a string.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	return append(append(append(dst, '"'), s...), '"')
}
