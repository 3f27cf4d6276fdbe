package sessionstore

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is. Every error the Store returns
// wraps at most one of them and names the operation and the session id.
var (
	// ErrBadID: a session id is not 8 to 128 characters of [A-Za-z0-9_-].
	// Ids come from clients (Mcp-Session-Id) and are checked before they
	// become KV keys.
	ErrBadID = errors.New("invalid session id")
	// ErrExists: Create found a live record with the same id.
	ErrExists = errors.New("session record exists")
	// ErrNotFound: no live record has the id; an expired or deleted record
	// is not found.
	ErrNotFound = errors.New("session record not found")
	// ErrConflict: the record changed since the revision the caller read
	// (another edge wrote it). Get it again and reapply the change.
	ErrConflict = errors.New("session record revision conflict")
	// ErrTooLarge: the encoded record exceeds the bucket's record limit
	// (RecordLimit of its size, at most MaxRecordSize). The concrete error
	// is a *TooLargeError.
	ErrTooLarge = errors.New("session record too large")
	// ErrLost: an Update or Touch found no record and no delete: the
	// record was evicted from a full bucket (the least recently written
	// go first) or expired while its edge could not write it. The session
	// was not ended by its client; the edge serving it may Create its
	// record again.
	ErrLost = errors.New("session record lost")
	// ErrInvalid: a record cannot be stored (unknown mode, initialize
	// params that are not JSON) or a stored record cannot be decoded.
	ErrInvalid = errors.New("invalid session record")
)

// TooLargeError reports a record whose encoding exceeds the record limit.
// It matches ErrTooLarge with errors.Is; its message names the session by
// IDHash only.
type TooLargeError struct {
	ID    string // session id
	Size  int    // encoded size in bytes
	Limit int    // the bucket's record limit
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("session %s: record is %d bytes, limit %d: %v", IDHash(e.ID), e.Size, e.Limit, ErrTooLarge)
}

// Unwrap makes errors.Is(err, ErrTooLarge) hold.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// ValidateID checks an untrusted session id before it is used as a key:
// 8 to 128 characters, each one of A-Z, a-z, 0-9, '_' or '-'.
func ValidateID(id string) error {
	if n := len(id); n < minIDLen || n > maxIDLen {
		return fmt.Errorf("session id %s: length %d not in %d..%d: %w", quoteID(id), n, minIDLen, maxIDLen, ErrBadID)
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return fmt.Errorf("session id %s: byte %d (%q) not in [A-Za-z0-9_-]: %w", quoteID(id), i, id[i], ErrBadID)
		}
	}
	return nil
}

const (
	minIDLen = 8
	maxIDLen = 128
)

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// quoteID quotes an untrusted id for an error message, cut to a length that
// keeps log lines bounded.
func quoteID(id string) string {
	const keep = 40
	if len(id) > keep {
		return fmt.Sprintf("%q...", id[:keep])
	}
	return fmt.Sprintf("%q", id)
}
