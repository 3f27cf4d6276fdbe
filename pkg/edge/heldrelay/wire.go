package heldrelay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"time"
	"unicode/utf8"
)

// SubjectPrefix is the subjects' prefix: SubjectPrefix.<edge token>.
const SubjectPrefix = "fleetgate.held"

// Subjects is what edge users are allowed to publish and subscribe to.
const Subjects = SubjectPrefix + ".>"

// Bounds of the messages.
const (
	// MaxRetry bounds a forwarded retry: the client's request body is
	// bounded by 4 MiB, its state by inputstate's bound.
	MaxRetry = 4<<20 + 64<<10
	// MaxOutcome bounds the holder's answer before the connection's own
	// limit (which is lower on most servers): a result larger than what
	// the connection carries is refused with ErrTooLarge.
	MaxOutcome  = 16 << 20
	maxIdentity = 4 << 10
	maxTool     = 1 << 10
	maxState    = 80 << 10
	// MaxWait bounds how long a holder waits for the call's next step on
	// behalf of a forwarded retry, whatever the retry asks.
	MaxWait = 10 * time.Minute
)

// ErrMalformed is wrapped by the decoders' refusals.
var ErrMalformed = errors.New("heldrelay: malformed message")

var tokenRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Subject is the subject edge id takes forwarded retries on. An id that is
// not a plain subject token (dots, wildcards, spaces) is hashed into one.
func Subject(edge string) string {
	if tokenRE.MatchString(edge) {
		return SubjectPrefix + "." + edge
	}
	sum := sha256.Sum256([]byte(edge))
	return SubjectPrefix + ".h" + hex.EncodeToString(sum[:16])
}

// Retry is a client's retry of a held call, forwarded to the holder.
type Retry struct {
	// Identity is the caller as the forwarding edge verified it (the
	// state's binding: its token's issuer and subject, or the identity
	// header's value).
	Identity string `json:"identity"`
	// Tool is the exposed name the retry called, Backend the backend the
	// forwarding edge routed it to.
	Tool    string `json:"tool"`
	Backend string `json:"backend"`
	// State is the sealed requestState as the client sent it.
	State string `json:"state"`
	// Responses are the client's inputResponses (a JSON object), as it
	// sent them; never logged.
	Responses json.RawMessage `json:"responses,omitempty"`
	// WaitMillis is how long the forwarding edge waits for the answer.
	WaitMillis int64 `json:"wait_ms"`
}

// Wait is how long the holder may take, bounded by MaxWait.
func (r *Retry) Wait() time.Duration {
	d := time.Duration(r.WaitMillis) * time.Millisecond
	if d <= 0 || d > MaxWait {
		return MaxWait
	}
	return d
}

// Outcome is the holder's answer to a forwarded retry: the call's result
// or next input request (Result, a tools/call result as the client gets
// it), or a JSON-RPC error the client gets instead (Code, Message).
type Outcome struct {
	Result json.RawMessage `json:"result,omitempty"`
	// Final says the call ended with Result (the holder recorded it).
	Final   bool   `json:"final,omitempty"`
	Code    int64  `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// DecodeRetry decodes a forwarded retry, refusing one out of bounds.
func DecodeRetry(b []byte) (*Retry, error) {
	if len(b) > MaxRetry {
		return nil, fmt.Errorf("%w: retry of %d bytes (max %d)", ErrMalformed, len(b), MaxRetry)
	}
	var r Retry
	if err := strictDecode(b, &r); err != nil {
		return nil, fmt.Errorf("%w: retry: %v", ErrMalformed, err)
	}
	switch {
	case len(r.Identity) > maxIdentity || !utf8.ValidString(r.Identity):
		return nil, fmt.Errorf("%w: retry identity of %d bytes", ErrMalformed, len(r.Identity))
	case r.Tool == "" || len(r.Tool) > maxTool || len(r.Backend) > maxTool || r.Backend == "":
		return nil, fmt.Errorf("%w: retry tool or backend empty or over %d bytes", ErrMalformed, maxTool)
	case r.State == "" || len(r.State) > maxState:
		return nil, fmt.Errorf("%w: retry requestState empty or over %d bytes", ErrMalformed, maxState)
	case len(r.Responses) > 0 && !isObject(r.Responses):
		return nil, fmt.Errorf("%w: retry inputResponses not an object", ErrMalformed)
	}
	return &r, nil
}

// DecodeOutcome decodes a holder's answer, refusing one out of bounds.
func DecodeOutcome(b []byte) (*Outcome, error) {
	if len(b) > MaxOutcome {
		return nil, fmt.Errorf("%w: outcome of %d bytes (max %d)", ErrMalformed, len(b), MaxOutcome)
	}
	var o Outcome
	if err := strictDecode(b, &o); err != nil {
		return nil, fmt.Errorf("%w: outcome: %v", ErrMalformed, err)
	}
	switch {
	case o.Code == 0 && !isObject(o.Result):
		return nil, fmt.Errorf("%w: outcome with neither a result object nor an error", ErrMalformed)
	case o.Code != 0 && (len(o.Result) > 0 || o.Final):
		return nil, fmt.Errorf("%w: outcome with both a result and an error", ErrMalformed)
	case len(o.Message) > maxTool*4:
		return nil, fmt.Errorf("%w: outcome message of %d bytes", ErrMalformed, len(o.Message))
	}
	return &o, nil
}

// strictDecode decodes one JSON value of b into v, refusing unknown
// members and trailing data.
func strictDecode(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

func isObject(b json.RawMessage) bool {
	b = bytes.TrimLeft(b, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}
