package credential

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/rs/zerolog"
)

// Secret is a resolved header value. Every way of printing or encoding it
// (fmt, encoding/json, encoding/text, slog, zerolog) gives Redacted; only
// Reveal gives the value. It holds the value behind a pointer, so that a
// struct printed with %+v that holds a Secret in an unexported field shows
// an address, not the value.
type Secret struct{ v *string }

// Redacted is what a Secret prints as.
const Redacted = "[redacted]"

// Reveal returns the value, for the one place that sends it.
func (s Secret) Reveal() string {
	if s.v == nil {
		return ""
	}
	return *s.v
}

// String implements fmt.Stringer.
func (Secret) String() string { return Redacted }

// GoString implements fmt.GoStringer (%#v).
func (Secret) GoString() string { return "credential.Secret(" + Redacted + ")" }

// Format implements fmt.Formatter: every verb prints Redacted.
func (Secret) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, Redacted) }

// MarshalJSON implements json.Marshaler.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + Redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler.
func (Secret) MarshalText() ([]byte, error) { return []byte(Redacted), nil }

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(Redacted) }

// MarshalZerologObject implements zerolog.LogObjectMarshaler.
func (Secret) MarshalZerologObject(e *zerolog.Event) { e.Str("value", Redacted) }

// ErrUnresolved is matched by every failure to resolve a reference.
var ErrUnresolved = errors.New("credential unresolved")

// ResolveError is a reference that could not be resolved. Its text names
// the backend, the header and the reference, never a value.
type ResolveError struct {
	// Backend and Header, when known, name what the value was for.
	Backend, Header string
	Ref             Ref
	// Reason is a fixed text (not set, empty, too large...) or the file
	// error's text (an *os.PathError names the path, which is the ref).
	Reason string
	Err    error
}

func (e *ResolveError) Error() string {
	if e.Backend != "" {
		return fmt.Sprintf("credential of backend %q, %s", e.Backend, e.Detail())
	}
	return "credential: " + e.Detail()
}

// Detail is the error without the backend: the header, the reference and
// the reason ("header Authorization: env NAME: not set"), or the reason
// alone when no header is concerned (headers that do not validate).
func (e *ResolveError) Detail() string {
	var b strings.Builder
	if e.Header != "" {
		b.WriteString("header " + e.Header + ": ")
	}
	if e.Ref != (Ref{}) {
		b.WriteString(e.Ref.String() + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns ErrUnresolved and the cause.
func (e *ResolveError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrUnresolved, e.Err}
	}
	return []error{ErrUnresolved}
}

// Resolve reads the value r refers to: the environment variable (missing
// or empty is an error), or the file (at most MaxValue bytes; one trailing
// newline, LF or CRLF, is trimmed; empty is an error). A value must be a
// valid header value: no control characters but horizontal tab. Errors are
// *ResolveError, matching ErrUnresolved.
func Resolve(r Ref) (Secret, error) {
	fail := func(reason string, err error) (Secret, error) {
		return Secret{}, &ResolveError{Ref: r, Reason: reason, Err: err}
	}
	if err := r.Validate(); err != nil {
		return fail(strings.TrimPrefix(err.Error(), ErrInvalidRef.Error()+": "), err)
	}
	var v string
	if r.Env != "" {
		var ok bool
		if v, ok = os.LookupEnv(r.Env); !ok {
			return fail("not set", nil)
		}
	} else {
		data, err := readBounded(r.File)
		if err != nil {
			return fail(err.Error(), err)
		}
		v = string(data)
		v = strings.TrimSuffix(strings.TrimSuffix(v, "\n"), "\r")
	}
	switch {
	case v == "":
		return fail("empty", nil)
	case len(v) > MaxValue:
		return fail(fmt.Sprintf("value is over %d bytes", MaxValue), nil)
	case !validValue(v):
		return fail("value has control characters (not a valid header value)", nil)
	}
	return Secret{v: &v}, nil
}

// readBounded reads at most MaxValue bytes of path; a longer file is an
// error (its content is never quoted).
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxValue+3)) // a value and a CRLF, plus one
	if err != nil {
		return nil, err // an *os.PathError: the path and the cause
	}
	if len(data) > MaxValue+2 {
		return nil, fmt.Errorf("file is over %d bytes", MaxValue)
	}
	return data, nil
}

// validValue reports whether v may be sent as a header value (RFC 9110
// field-value: visible characters, spaces and tabs, obs-text).
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// NewSecret holds v as a Secret: a value obtained otherwise than from a
// reference (a token a token endpoint issued) gets the same protection
// from printing and encoding.
func NewSecret(v string) Secret { return Secret{v: &v} }
