package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// findDeepResponse is findResponse for a response nested deeper than
// fastjson parses (fastjson.MaxDepth) but within mcpwire.MaxDepth: found
// with encoding/json, and given the shape of an uncommon result (decoded,
// validated and re-encoded on its way to the client).
func (p *Pool) findDeepResponse(ctx context.Context, data []byte, to peer, id string) (*wireMessage, error) {
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
				p.asked(ctx, to, raw, m.Method, m.Params)
			} else {
				notified(to, m.Method, m.Params)
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
