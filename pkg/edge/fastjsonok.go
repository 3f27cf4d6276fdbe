package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/valyala/fastjson"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// fastJSON reports whether data may be given to fastjson's parser: nested
// at most fastjson.MaxDepth (300; deeper, its parser fails anyway, after
// building error texts whose cost grows with the square of the depth) and
// valid by encoding/json's validator, a state machine linear in the size.
// fastjson's own validator builds such texts too: 2 KB of invalid JSON
// nested 1,000 deep cost it 19 ms, a lever for anyone who can send bytes.
// What is refused here goes to the go-sdk's decoder, or fails as invalid.
//
// fastjson's validator is the faster of the two (about 2.5x on a 4 KiB
// body), and its extra cost on invalid input is bounded by the depth:
// bodies nested at most fastValidateDepth deep (nearly all calls) use it.
func fastJSON(data []byte) bool {
	d, err := mcpwire.Depth(data, fastjson.MaxDepth)
	if err != nil {
		return false
	}
	if d <= fastValidateDepth {
		return fastjson.ValidateBytes(data) == nil
	}
	return json.Valid(data)
}

// fastValidateDepth is the deepest nesting given to fastjson's validator
// (2 KB of invalid JSON this deep costs it about as much as a 4 KiB call's
// parse).
const fastValidateDepth = 16

// findDeepResponse is findResponse for a response nested deeper than
// fastjson parses (fastjson.MaxDepth) but within mcpwire.MaxDepth: found
// with encoding/json, and given the shape of an uncommon result (decoded,
// validated and re-encoded on its way to the client).
func (p *pool) findDeepResponse(ctx context.Context, data []byte, url, sid, id string) (*wireMessage, error) {
	if !json.Valid(data) {
		return nil, fmt.Errorf("decode response: %w", errBadResponse)
	}
	want := mcpwire.StringID(id)
	for m, err := range mcpwire.Messages(data) {
		if err != nil {
			return nil, fmt.Errorf("decode response: %w", errors.Join(errBadResponse, err))
		}
		if m.Method != "" {
			if !m.ID.IsZero() {
				raw, _ := m.ID.MarshalJSON()
				p.refuse(ctx, url, sid, &wireMessage{ID: raw, Method: m.Method})
			}
			continue
		}
		if m.ID != want {
			continue
		}
		raw, _ := m.ID.MarshalJSON()
		msg := &wireMessage{ID: raw, Result: m.Result}
		if m.Error != nil {
			msg.Error = &jsonrpc.Error{Code: m.Error.Code, Message: m.Error.Message, Data: m.Error.Data}
		}
		return msg, nil
	}
	return nil, errNoResponse
}
