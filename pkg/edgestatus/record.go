package edgestatus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/fleetgate/fleetgate/pkg/mcpwire"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// Limits of a record: its size, its instances and each string.
const (
	MaxRecord    = 32 << 10
	MaxInstances = 64
	MaxString    = 256
)

// Record is an edge's status: its id, when it was written, and its
// instances of stdio backends (sorted by backend).
type Record struct {
	Edge      string     `json:"edge"`
	UpdatedAt time.Time  `json:"updated_at"`
	Stdio     []Instance `json:"stdio"`
}

// Instance is an edge's instance of one stdio backend: the backend, the
// allow-list entry it runs, its state (idle, starting, up, backoff,
// stopping, stopped; refused when the edge may not run it), its process id, restarts, since when it is in its
// state, why the last process ended, and whether the restart cap holds
// the next start back.
type Instance struct {
	Backend   string    `json:"backend"`
	Command   string    `json:"command"`
	State     string    `json:"state"`
	PID       int       `json:"pid,omitempty"`
	Restarts  int       `json:"restarts"`
	Since     time.Time `json:"since"`
	LastError string    `json:"last_error,omitempty"`
	Capped    bool      `json:"restart_capped,omitempty"`
}

// FromStdio is the record of edge at now with the instances st (at most
// MaxInstances; strings clipped to MaxString).
func FromStdio(edge string, now time.Time, st []stdio.Status) Record {
	r := Record{Edge: clip(edge), UpdatedAt: now.UTC(), Stdio: make([]Instance, 0, min(len(st), MaxInstances))}
	for i, s := range st {
		if i == MaxInstances {
			break
		}
		r.Stdio = append(r.Stdio, Instance{Backend: clip(s.Backend), Command: clip(s.Command), State: clip(s.State), PID: s.PID,
			Restarts: s.Restarts, Since: s.Since.UTC(), LastError: clip(s.LastError), Capped: s.Capped})
	}
	return r
}

// Encode is the stored form of r.
func (r Record) Encode() ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("edge status %q: encode: %w", r.Edge, err)
	}
	if len(b) > MaxRecord {
		return nil, fmt.Errorf("edge status %q: %d bytes: %w", r.Edge, len(b), ErrRecord)
	}
	return b, nil
}

// ErrRecord is wrapped by every refusal of DecodeRecord.
var ErrRecord = errors.New("edge status record: over its bounds or malformed")

// DecodeRecord reads the record stored under key (Key of an edge id). The value is
// hostile: at most MaxRecord bytes, one JSON object of known members only,
// at most MaxInstances instances, strings valid UTF-8 of at most
// MaxString bytes, naming the key's edge.
func DecodeRecord(key string, value []byte) (Record, error) {
	if len(value) > MaxRecord {
		return Record{}, fmt.Errorf("%w: %d bytes (at most %d)", ErrRecord, len(value), MaxRecord)
	}
	if err := mcpwire.Check(value, 4); err != nil { // three levels deep: anything deeper is not one
		return Record{}, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.DisallowUnknownFields()
	var r Record
	if err := dec.Decode(&r); err != nil {
		return Record{}, fmt.Errorf("%w: %w", ErrRecord, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Record{}, fmt.Errorf("%w: data after the record", ErrRecord)
	}
	if Key(r.Edge) != key {
		return Record{}, fmt.Errorf("%w: stored under %q, names edge %q", ErrRecord, clip(key), clip(r.Edge))
	}
	if len(r.Stdio) > MaxInstances {
		return Record{}, fmt.Errorf("%w: %d instances (at most %d)", ErrRecord, len(r.Stdio), MaxInstances)
	}
	strs := []string{r.Edge}
	for _, in := range r.Stdio {
		strs = append(strs, in.Backend, in.Command, in.State, in.LastError)
		if in.PID < 0 || in.Restarts < 0 {
			return Record{}, fmt.Errorf("%w: a negative pid or restart count", ErrRecord)
		}
	}
	for _, s := range strs {
		if len(s) > MaxString || !utf8.ValidString(s) {
			return Record{}, fmt.Errorf("%w: a string over %d bytes or not UTF-8", ErrRecord, MaxString)
		}
	}
	return r, nil
}

// clip cuts s to at most MaxString bytes at a rune boundary, valid UTF-8.
func clip(s string) string {
	if !utf8.ValidString(s) {
		s = string([]rune(s)) // invalid bytes become U+FFFD
	}
	if len(s) <= MaxString {
		return s
	}
	n := MaxString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
