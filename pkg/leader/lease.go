package leader

import (
	"encoding/json"
	"fmt"
	"time"
)

// Lease is the value stored under the election key.
type Lease struct {
	// Holder is the id of the elector that wrote the lease.
	Holder string
	// Term is the holder's term. It is zero in the write that acquires a
	// lease: the term of a leadership is the KV revision of that write, so
	// terms increase strictly across leaders without reading the previous
	// lease, and survive a released (deleted) key. Renewals carry it.
	Term uint64
	// TTL is how long a standby waits, from when it first sees a revision
	// of the lease, before it takes over. Standbys use the TTL written
	// here, not their own.
	TTL time.Duration
	// RenewedAt is the holder's wall clock at the write, for people
	// reading the bucket. No decision uses it: wall clocks of different
	// machines are never compared.
	RenewedAt time.Time
}

// TermAt returns the term of a lease stored at revision rev.
func (l Lease) TermAt(rev uint64) uint64 {
	if l.Term != 0 {
		return l.Term
	}
	return rev
}

type leaseJSON struct {
	Holder    string    `json:"holder"`
	Term      uint64    `json:"term,omitempty"`
	TTL       string    `json:"ttl"`
	RenewedAt time.Time `json:"renewed_at"`
}

// MarshalJSON encodes the lease as {"holder", "term", "ttl" (Go duration
// syntax), "renewed_at" (RFC 3339)}.
func (l Lease) MarshalJSON() ([]byte, error) {
	return json.Marshal(leaseJSON{Holder: l.Holder, Term: l.Term, TTL: l.TTL.String(), RenewedAt: l.RenewedAt})
}

// UnmarshalJSON decodes what MarshalJSON wrote.
func (l *Lease) UnmarshalJSON(data []byte) error {
	var j leaseJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	ttl, err := time.ParseDuration(j.TTL)
	if err != nil {
		return fmt.Errorf("lease ttl: %w", err)
	}
	*l = Lease{Holder: j.Holder, Term: j.Term, TTL: ttl, RenewedAt: j.RenewedAt}
	return nil
}
