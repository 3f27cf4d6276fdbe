package config

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidConfig is matched (errors.Is) by every *FieldError.
var ErrInvalidConfig = errors.New("invalid fleet config")

// ErrNotFound is wrapped by Delete when the group or backend does not exist.
var ErrNotFound = errors.New("not found")

// FieldError is a configuration error tied to one field. Parse and Load
// report the file name, the 1-based line and the field path in the YAML
// document (e.g. "groups[0].backends[1].url"); Put reports the admin API
// field ("group", "name", "url" or "transport") without file or line. A YAML
// syntax error has a line but no field.
//
// errors.Is(err, ErrInvalidConfig) holds for every FieldError, and
// errors.Is/As also reach Err, the underlying cause when there is one (for
// instance a *health.PolicyError).
type FieldError struct {
	File  string
	Line  int
	Field string
	Msg   string
	Err   error
}

// Error formats the error as one line: "file:line: field: msg", leaving out
// the parts that are empty.
func (e *FieldError) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns ErrInvalidConfig and the underlying cause, if any.
func (e *FieldError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidConfig, e.Err}
	}
	return []error{ErrInvalidConfig}
}
