package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// maxBody bounds one HTTP response body the client reads (a tools/list page
// of a large catalog is a few MiB at most).
const maxBody = 64 << 20

// RPCError is a JSON-RPC error answered by the server.
type RPCError struct {
	Method  string
	Code    int64
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("%s: JSON-RPC error %d: %s", e.Method, e.Code, e.Message)
}

// HTTPError is a non-2xx HTTP status answered by the server.
type HTTPError struct {
	Method     string
	StatusCode int
	Body       string // the first bytes of the body
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s: HTTP %d: %s", e.Method, e.StatusCode, e.Body)
}

// ErrNoResponse is returned when a response body ended without the JSON-RPC
// response to the request (it is mcpwire.ErrNoResponse).
var ErrNoResponse = mcpwire.ErrNoResponse

// rpcClient speaks just enough of the streamable HTTP transport (MCP
// 2025-03-26 to 2025-11-25) for a verification: POST a JSON-RPC request,
// read the response from an application/json or text/event-stream body,
// carry Mcp-Session-Id and MCP-Protocol-Version. Results are kept as raw
// JSON, so nothing a server sends is lost to a typed struct.
type rpcClient struct {
	url       string
	http      *http.Client
	header    http.Header
	sessionID string
	protocol  string // negotiated; sent as MCP-Protocol-Version once set
	nextID    int64
}

// call sends a request and returns its raw result.
func (c *rpcClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.nextID++
	id := c.nextID
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", method, err)
	}
	resp, err := c.post(ctx, method, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		c.sessionID = sid
	}
	msg, err := readResponse(resp, id)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if msg.Error != nil {
		return nil, &RPCError{Method: method, Code: msg.Error.Code, Message: msg.Error.Message}
	}
	return msg.Result, nil
}

// notify sends a notification; the server answers 202 Accepted.
func (c *rpcClient) notify(ctx context.Context, method string) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method})
	if err != nil {
		return fmt.Errorf("%s: encode notification: %w", method, err)
	}
	resp, err := c.post(ctx, method, body)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	return resp.Body.Close()
}

// close ends the session with DELETE, as a polite client does. Errors are
// ignored: servers may refuse DELETE (405) and the session times out anyway.
func (c *rpcClient) close(ctx context.Context) {
	if c.sessionID == "" {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.url, nil)
	if err != nil {
		return
	}
	c.setHeaders(req)
	if resp, err := c.http.Do(req); err == nil {
		_ = resp.Body.Close()
	}
}

func (c *rpcClient) post(ctx context.Context, method string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	c.setHeaders(req)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err) // *url.Error names the URL
	}
	if resp.StatusCode/100 != 2 {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		_ = resp.Body.Close()
		return nil, &HTTPError{Method: method, StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(snippet))}
	}
	return resp, nil
}

func (c *rpcClient) setHeaders(req *http.Request) {
	for k, vs := range c.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if c.sessionID != "" {
		req.Header.Set("Mcp-Session-Id", c.sessionID)
	}
	if c.protocol != "" {
		req.Header.Set("MCP-Protocol-Version", c.protocol)
	}
}

// readResponse finds the response with the given id in an application/json
// body (one message or a batch) or a text/event-stream body (one message per
// event; server requests and notifications on the stream are skipped).
func readResponse(resp *http.Response, id int64) (*mcpwire.Message, error) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch ct {
	case "text/event-stream":
		return readSSE(mcpwire.LimitReader(resp.Body, maxBody), mcpwire.IntID(id))
	case "application/json":
		data, err := mcpwire.ReadBody(resp.Body, maxBody)
		if err != nil {
			return nil, fmt.Errorf("read body: %w", err)
		}
		return mcpwire.FindResponse(data, mcpwire.IntID(id))
	default:
		return nil, fmt.Errorf("unexpected Content-Type %q (status %d)", resp.Header.Get("Content-Type"), resp.StatusCode)
	}
}

// readSSE reads server-sent events until the one carrying the response.
// Each event is bounded by maxBody, as is the whole stream (r).
func readSSE(r io.Reader, id mcpwire.ID) (*mcpwire.Message, error) {
	er := mcpwire.NewEventReader(r, maxBody)
	for {
		ev, err := er.Next()
		if err == io.EOF {
			return nil, ErrNoResponse
		}
		if err != nil {
			return nil, fmt.Errorf("read event stream: %w", err)
		}
		if len(bytes.TrimSpace(ev.Data)) == 0 {
			continue // a priming event
		}
		if m, err := mcpwire.FindResponse(ev.Data, id); !errors.Is(err, ErrNoResponse) {
			return m, err
		}
	}
}
