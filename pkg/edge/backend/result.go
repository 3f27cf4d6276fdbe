package backend

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/valyala/fastjson"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// A backend's tools/call result reaches the client as it came when it has
// the common shape (plainToolResult: checked strictly, without decoding
// it); any other is decoded, which validates it, and re-encoded.

// Reply is a tools/call result: a plain one as the backend sent it
// (raw), or a value (res; raw nil).
type Reply struct {
	Raw     json.RawMessage
	IsError bool                // of raw
	HasMeta bool                // raw has _meta
	Res     *mcp.CallToolResult // nil until decoded
	// Stateless: Raw is the result of a backend of the stateless
	// generation (callStateless), resultType and all, decoded when used.
	Stateless bool
}

// Decoded is the result as a value. A raw result was validated when it
// arrived (plainToolResult), so it decodes.
func (r *Reply) Decoded() *mcp.CallToolResult {
	if r.Res == nil {
		res, err := decodeToolResult(r.Raw)
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "decode result: " + err.Error()}}}
		}
		r.Res = res
	}
	return r.Res
}

// plainToolResult reports whether raw is a tools/call result of the
// common shape that decodeToolResult's fast path is sure to accept: an
// object of content (text items with at most _meta), structuredContent,
// isError and _meta. Anything else is decoded (and so validated) at once.
func plainToolResult(raw json.RawMessage) bool {
	if !mcpwire.FastJSONValid(raw) { // bounded, linear, and what encoding/json takes
		return false
	}
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(raw)
	return err == nil && plainToolValue(v)
}

// plainToolValue is plainToolResult of a parsed (and validated) value.
func plainToolValue(v *fastjson.Value) bool {
	if v.Type() != fastjson.TypeObject {
		return false
	}
	ok := true
	var seen uint8
	v.GetObject().Visit(func(k []byte, v *fastjson.Value) {
		var bit uint8
		switch string(k) {
		case "content":
			bit, ok = 1, ok && plainContent(v)
		case "isError":
			bit, ok = 2, ok && (v.Type() == fastjson.TypeTrue || v.Type() == fastjson.TypeFalse)
		case "_meta":
			bit, ok = 4, ok && v.Type() == fastjson.TypeObject
		case "structuredContent":
			bit = 8
		default:
			ok = false
		}
		ok = ok && seen&bit == 0
		seen |= bit
	})
	return ok
}

func plainContent(v *fastjson.Value) bool {
	items, err := v.Array()
	if err != nil {
		return false
	}
	for _, it := range items {
		o, err := it.Object()
		if err != nil || string(it.GetStringBytes("type")) != "text" {
			return false
		}
		ok := true
		var seen uint8
		o.Visit(func(k []byte, v *fastjson.Value) {
			var bit uint8
			switch string(k) {
			case "type":
				bit = 1
			case "text":
				bit, ok = 2, ok && v.Type() == fastjson.TypeString
			case "_meta":
				bit, ok = 4, ok && v.Type() == fastjson.TypeObject
			default:
				ok = false
			}
			ok = ok && seen&bit == 0
			seen |= bit
		})
		if !ok || it.Get("text") == nil {
			return false
		}
	}
	return true
}

// wireToolResult is a tools/call result as a 2025-11-25 backend sends it,
// for decodeToolResult's fast path.
type wireToolResult struct {
	Meta              mcp.Meta        `json:"_meta,omitempty"`
	Content           []wireText      `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	// Members of later protocols: their presence takes the go-sdk's path.
	ResultType    json.RawMessage `json:"resultType,omitempty"`
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`
	RequestState  json.RawMessage `json:"requestState,omitempty"`
}

type wireText struct {
	Type        string           `json:"type"`
	Text        string           `json:"text"`
	Meta        mcp.Meta         `json:"_meta,omitempty"`
	Annotations *mcp.Annotations `json:"annotations,omitempty"`
}

// decodeToolResult decodes a backend's tools/call result. A result whose
// content is all text (the common case) is decoded with encoding/json and
// its structuredContent kept as raw JSON, which the go-sdk server writes
// out as it came; any other result goes through the go-sdk's own
// decoding, whose decoder allocates tens of KB per value.
func decodeToolResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var w wireToolResult
	if err := json.Unmarshal(raw, &w); err == nil && w.ResultType == nil && w.InputRequests == nil && w.RequestState == nil {
		res := &mcp.CallToolResult{Meta: w.Meta, IsError: w.IsError}
		if len(w.StructuredContent) > 0 && !bytes.Equal(w.StructuredContent, []byte("null")) {
			res.StructuredContent = w.StructuredContent
		}
		text := true
		res.Content = make([]mcp.Content, len(w.Content)) // never nil, as the go-sdk's
		for i, c := range w.Content {
			if c.Type != "text" {
				text = false
				break
			}
			res.Content[i] = &mcp.TextContent{Text: c.Text, Meta: c.Meta, Annotations: c.Annotations}
		}
		if text {
			return res, nil
		}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// parsers are the fastjson parsers of backend responses and results.
var parsers fastjson.ParserPool
