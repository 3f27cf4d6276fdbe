package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"
)

// Frame types of GET /v1/stream.
const (
	// FrameHello opens every stream: {"generation": N, "heartbeat_ms": M}.
	FrameHello = "hello"
	// FrameEvent is one new event of the log (StreamEvent); its id is
	// the generation.
	FrameEvent = "event"
	// FrameReset says events were skipped (the log was unreadable for a
	// long run of them, or purged): reload. {"generation": N}.
	FrameReset = "reset"
	// FrameSessions carries session record changes (SessionsFrame).
	FrameSessions = "sessions"
	// FrameStatus is a change of the status the controller reports for
	// a backend (StatusFrame), event or not.
	FrameStatus = "status"
)

// heartbeatFrame is an SSE comment: it keeps proxies and the client's
// liveness check awake and carries no data.
var heartbeatFrame = []byte(": ping\n\n")

// frame encodes one server-sent event. JSON has no raw line breaks, so
// the data is one line.
func frame(typ string, id uint64, v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(map[string]string{"error": "unencodable frame: " + err.Error()})
	}
	var b bytes.Buffer
	b.Grow(len(data) + 48)
	b.WriteString("event: ")
	b.WriteString(typ)
	b.WriteByte('\n')
	if id != 0 {
		b.WriteString("id: ")
		b.WriteString(strconv.FormatUint(id, 10))
		b.WriteByte('\n')
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	return b.Bytes()
}

// helloJSON is the data of FrameHello.
type helloJSON struct {
	Generation  uint64 `json:"generation"`
	HeartbeatMS int64  `json:"heartbeat_ms"`
	Sessions    bool   `json:"sessions"`
}

// serveStream is GET /v1/stream: a hello, then frames as they come and a
// heartbeat every Heartbeat, until the client goes, falls behind, a write
// blocks for WriteTimeout, or the dashboard stops.
func (d *Dashboard) serveStream(w http.ResponseWriter, r *http.Request) {
	secure(w.Header())
	w.Header().Set("Cache-Control", "no-store")
	c, err := d.hub.join()
	if err != nil {
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
		return
	}
	defer d.hub.leave(c)
	rc := http.NewResponseController(w)
	write := func(b []byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(d.o.WriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	hello := helloJSON{Generation: d.o.Reader.State().Generation, HeartbeatMS: d.o.Heartbeat.Milliseconds(), Sessions: d.o.Sessions != nil}
	if !write(frame(FrameHello, 0, hello)) {
		return
	}
	tick := time.NewTicker(d.o.Heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-c.done:
			return
		case f := <-c.ch:
			if !write(f) {
				return
			}
		case <-tick.C:
			if !write(heartbeatFrame) {
				return
			}
		}
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
