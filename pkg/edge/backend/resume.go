package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
)

// A backend may end a call's event stream before the response (SEP-1699:
// a server that polls, or one that restarts its connections): when the
// stream gave event ids, the call goes on by a GET of the session with
// Last-Event-ID, on which the backend sends what followed, the response
// among it, as a client of the streamable HTTP transport does. A stream
// without an event id cannot be resumed: the call fails as before.

// maxResumes bounds the resumptions of one call's stream; resumeBackoff
// is the wait before the second and later ones (doubling, at most
// maxResumeWait), so that a backend that ends every stream at once is
// not asked in a loop.
const (
	maxResumes    = 8
	resumeBackoff = 50 * time.Millisecond
	maxResumeWait = time.Second
)

// readResumable reads a call's event stream body, resuming it while it
// ends before the response.
func (p *Pool) readResumable(ctx context.Context, body io.Reader, to peer, id string) (*wireMessage, error) {
	msg, last, err := p.readEvents(ctx, body, to, id)
	for n := 0; errors.Is(err, errNoResponse) && len(last) > 0 && n < maxResumes; n++ {
		if n > 0 {
			wait := min(resumeBackoff<<(n-1), maxResumeWait)
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
		}
		resp, gerr := p.resume(ctx, to, string(last))
		if gerr != nil {
			return nil, fmt.Errorf("resume event stream: %w", gerr)
		}
		var more []byte
		msg, more, err = p.readEvents(ctx, mcpwire.Guard(resp.Body, true, mcpwire.Limits{MaxMessage: p.maxResponse}), to, id)
		resp.Body.Close()
		if len(more) > 0 {
			last = more
		}
	}
	return msg, err
}

// resume opens the GET that resumes the session's stream after event
// lastID.
func (p *Pool) resume(ctx context.Context, to peer, lastID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, to.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header = http.Header{
		"Accept":               {"text/event-stream"},
		"Mcp-Session-Id":       {to.sid},
		"Mcp-Protocol-Version": backendProtocolHeader,
		"Last-Event-Id":        {lastID},
	}
	for k, v := range to.creds {
		req.Header[k] = v
	}
	var resp *http.Response
	if p.direct != nil {
		resp, err = p.direct.RoundTrip(req)
	} else {
		resp, err = p.http.Do(req)
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header.Get("Content-Type")) != "text/event-stream" {
		resp.Body.Close() // the backend's own text: never passed on
		return nil, &errHTTPStatus{code: resp.StatusCode}
	}
	return resp, nil
}
