package mcpwire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// MaxDepth is the one nesting limit of fleetgate: arrays and objects nested
// in one JSON message, from a client, a backend or the bus. The go-sdk
// refuses tool schemas deeper than 1000 when it adds a tool.
const MaxDepth = 1000

// Sentinel errors, matched with errors.Is.
var (
	// ErrTooDeep: a message nested deeper than the limit.
	ErrTooDeep = errors.New("mcpwire: JSON nested too deep")
	// ErrTooLarge: a message or body over its size limit.
	ErrTooLarge = errors.New("mcpwire: message too large")
	// ErrUnbalanced: brackets that do not pair up, or an unterminated
	// string (the message cannot be JSON).
	ErrUnbalanced = errors.New("mcpwire: JSON brackets or strings unbalanced")
)

// DepthError reports where a message went past the depth limit.
type DepthError struct {
	Limit  int
	Offset int // byte offset of the bracket that went past Limit
}

func (e *DepthError) Error() string {
	return fmt.Sprintf("mcpwire: JSON nested deeper than %d (at byte %d)", e.Limit, e.Offset)
}

func (e *DepthError) Unwrap() error { return ErrTooDeep }

// Depth returns the deepest nesting of arrays and objects in data, reading
// it once without recursion; brackets inside strings do not count. It
// stops early, with a *DepthError, once the nesting passes limit (limit <=
// 0 means no limit), and reports ErrUnbalanced for a closing bracket
// without an opening one or an unterminated string. It does not otherwise
// validate the JSON: that is the following parser's job, which Depth makes
// safe to run.
func Depth(data []byte, limit int) (int, error) {
	depth, deepest := 0, 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			end := stringEnd(data, i+1)
			if end < 0 {
				return deepest, ErrUnbalanced
			}
			i = end
		case '[', '{':
			depth++
			if depth > deepest {
				deepest = depth
				if limit > 0 && depth > limit {
					return deepest, &DepthError{Limit: limit, Offset: i}
				}
			}
		case ']', '}':
			depth--
			if depth < 0 {
				return deepest, ErrUnbalanced
			}
		}
	}
	if depth != 0 {
		return deepest, ErrUnbalanced
	}
	return deepest, nil
}

// stringEnd returns the index of the quote that closes the string whose
// contents begin at from, or -1: each quote is found with bytes.IndexByte
// and is the end unless an odd run of backslashes precedes it. Every byte
// is looked at a bounded number of times (a backslash run is counted back
// only to the previous quote).
func stringEnd(data []byte, from int) int {
	for j := from; ; {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0
		for p := q - 1; p >= from && data[p] == '\\'; p-- {
			n++
		}
		if n%2 == 0 {
			return q
		}
		j = q + 1
	}
}

// Check is Depth with only its verdict: nil when data is nested at most
// limit deep and its brackets and strings balance.
func Check(data []byte, limit int) error {
	_, err := Depth(data, limit)
	return err
}

// ReadBody reads r to its end, at most limit bytes: ErrTooLarge (wrapped
// with the limit) when there is more. The bytes read so far are returned
// either way, so a caller can hand a body it will not take to another
// reader whole.
func ReadBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return b, fmt.Errorf("mcpwire: read body: %w", err)
	}
	if int64(len(b)) > limit {
		return b, fmt.Errorf("%w: body over %d bytes", ErrTooLarge, limit)
	}
	return b, nil
}

// LimitReader reads r up to limit bytes. Unlike io.LimitReader, which
// ends the stream there quietly (a cut that a parser takes for the end),
// a read past the limit fails with an error wrapping ErrTooLarge, once
// the bytes up to the limit are delivered.
func LimitReader(r io.Reader, limit int64) io.Reader {
	return &limitReader{r: r, n: limit, limit: limit}
}

type limitReader struct {
	r        io.Reader
	n, limit int64 // bytes left; the limit
	over     bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.over {
		return 0, fmt.Errorf("%w: stream over %d bytes", ErrTooLarge, l.limit)
	}
	if int64(len(p)) > l.n {
		p = p[:l.n+1] // a byte more, to tell the end from more
	}
	n, err := l.r.Read(p)
	if int64(n) > l.n {
		n, l.n, l.over = int(l.n), 0, true
		return n, fmt.Errorf("%w: stream over %d bytes", ErrTooLarge, l.limit)
	}
	l.n -= int64(n)
	return n, err
}
