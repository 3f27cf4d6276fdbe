package events

import (
	"fmt"
)

// ErrorCode classifies an event log error.
type ErrorCode int

// Error codes of the event log.
const (
	// CodeFenced: the stream's last generation is not the one this writer
	// expected; another writer published since. The writer must stop.
	CodeFenced ErrorCode = iota + 1
	// CodeDecode: an event could not be decoded.
	CodeDecode
	// CodeInvalidEvent: an event decoded but cannot be applied to the state.
	CodeInvalidEvent
	// CodePurged: events needed for the request were removed by retention
	// and no snapshot covers them.
	CodePurged
	// CodeClosed: the outbox is closed.
	CodeClosed
	// CodeTooLarge: an encoded event exceeds the server's payload limit.
	CodeTooLarge
)

// Error is a typed event log error. Match with errors.Is against the
// sentinels below, or errors.As to read the details.
type Error struct {
	Code ErrorCode
	// Generation the error concerns, when known.
	Generation uint64
	Msg        string
	Err        error
}

func (e *Error) Error() string {
	s := e.Msg
	if e.Generation != 0 {
		s = fmt.Sprintf("generation %d: %s", e.Generation, s)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error with the same code, so that
// errors.Is(err, ErrFenced) holds for every fencing error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Msg == "" && t.Generation == 0 && t.Err == nil
}

// Sentinels for errors.Is.
var (
	ErrFenced       = &Error{Code: CodeFenced}
	ErrDecode       = &Error{Code: CodeDecode}
	ErrInvalidEvent = &Error{Code: CodeInvalidEvent}
	ErrPurged       = &Error{Code: CodePurged}
	ErrClosed       = &Error{Code: CodeClosed}
	ErrTooLarge     = &Error{Code: CodeTooLarge}
)

func errorf(code ErrorCode, gen uint64, err error, format string, args ...any) *Error {
	return &Error{Code: code, Generation: gen, Msg: fmt.Sprintf(format, args...), Err: err}
}
