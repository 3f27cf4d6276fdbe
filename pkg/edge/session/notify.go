package session

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/sessionstore"
)

// List kinds, as bits of a session's pending notifications, in ListIndex
// order.
const (
	PendingTools     = view.BitTools
	PendingPrompts   = view.BitPrompts
	PendingResources = view.BitResources
)

// ToolsChanged is the tools list_changed method.
const ToolsChanged = "notifications/tools/list_changed"

// ListMethods are the list_changed methods by ListIndex.
var ListMethods = [3]string{ToolsChanged, "notifications/prompts/list_changed", "notifications/resources/list_changed"}

// MaxUpdatesOwed bounds the resources/updated a session is owed at once
// (distinct URIs; its subscriptions are bounded the same).
const MaxUpdatesOwed = sessionstore.MaxSubscriptions

// PendingOf is the pending bits of a change.
func PendingOf(c view.Change) uint8 { return c.Bits() }

// ListIndex is the index of a list_changed method in ListMethods; -1 for
// other methods.
func ListIndex(method string) int {
	for i, m := range ListMethods {
		if m == method {
			return i
		}
	}
	return -1
}

// sendingMiddleware makes a listen session's list_changed notifications,
// sent by the go-sdk, exactly one per applied batch, counts them and
// observes their latency from the event that caused them.
//
// The go-sdk sends a list_changed 10ms after the last change to a Server's
// list. A notification for a served value this session was already
// notified of is dropped, so that a client hears of each applied batch
// once whatever the timing of the markers; so is one raised while the
// previous one of its kind is still being written.
func (s *Session) sendingMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		i := ListIndex(method)
		if i < 0 || s.kind == KindStateless { // the stateless server: many request sessions share it
			return next(ctx, method, req)
		}
		s.mu.Lock()
		dup := s.notified[i] == s.applied
		busy := s.sending[i]
		if !dup && !busy {
			s.notified[i] = s.applied
			s.sending[i] = true
		}
		s.mu.Unlock()
		if dup {
			return nil, nil
		}
		if busy {
			// The previous one is still being written: the client is not
			// reading. It tells the client to list again, which covers
			// this change too; queuing more would only pile up blocked
			// goroutines.
			s.reg.dropped()
			return nil, nil
		}
		res, err := next(ctx, method, req)
		s.mu.Lock()
		s.sending[i] = false
		s.mu.Unlock()
		if err == nil {
			s.reg.notified(method)
			s.reg.observeLatency(s)
		}
		return res, err
	}
}

// dropped counts a notification merged into a pending one.
func (g *Registry) dropped() {
	if g.m.Dropped != nil {
		g.m.Dropped.Inc()
	}
}

// notified counts a notification of method written.
func (g *Registry) notified(method string) {
	if g.m.Notifications != nil {
		g.m.Notifications.WithLabelValues(method).Inc()
	}
}

// notifiedList counts a list_changed of ListMethods[i] written.
func (g *Registry) notifiedList(i int) {
	if c := g.listNotes[i]; c != nil {
		c.Inc()
	}
}

// observeLatency observes, once notified, the time from the oldest event
// s had not been notified of.
func (g *Registry) observeLatency(s *Session) {
	since := s.since.Swap(0)
	if since == 0 {
		return
	}
	age := time.Since(time.Unix(0, since))
	if g.m.Latency != nil {
		g.m.Latency.Observe(age.Seconds())
	}
	g.m.Events.ChangeAge(events.HopNotified, age)
}

// UpdateFrame is the SSE event of notifications/resources/updated of uri.
func UpdateFrame(uri string) []byte {
	if id, ok := strings.CutPrefix(uri, elicitationPrefix); ok {
		return elicitationFrame(id)
	}
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/resources/updated",
		"params": map[string]string{"uri": uri}}) // strings only: it encodes
	return append(append([]byte("event: message\ndata: "), data...), "\n\n"...)
}

// A URL-mode elicitation's completion (a user's sign-in, package signin)
// is owed as an update whose key is elicitationPrefix and the id: it goes
// on the standalone stream with the resources/updated, and is sent again
// to a stream that resumes before it, as they are.
const elicitationPrefix = "\x00elicitation-complete:"

// elicitationMethod is the notification of a completed elicitation.
const elicitationMethod = "notifications/elicitation/complete"

// elicitationFrame is the SSE frame of the completion of elicitation id.
func elicitationFrame(id string) []byte {
	data, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": elicitationMethod,
		"params": map[string]string{"elicitationId": id}})
	return append(append([]byte("event: message\ndata: "), data...), "\n\n"...)
}

// OweElicitationComplete owes the client notifications/elicitation/complete
// of the URL-mode elicitation id, on its standalone stream.
func (s *Session) OweElicitationComplete(id string) { s.OweUpdate(elicitationPrefix + id) }

// updateMethod is the method of an owed update (the metric's label).
func updateMethod(key string) string {
	if strings.HasPrefix(key, elicitationPrefix) {
		return elicitationMethod
	}
	return "notifications/resources/updated"
}
