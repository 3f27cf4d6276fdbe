package sessionstore

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// MinOwnerKey is the shortest secret NewOwnerKey takes.
const MinOwnerKey = 32

// ErrOwnerKey: an owner key secret is too short.
var ErrOwnerKey = errors.New("session owner key too short")

// OwnerKey keys the owner hashes of a fleet: every edge given the same
// secret computes the same owner for an identity, and nobody without it
// can compute one (an identity cannot be confirmed against a record by
// anyone who reads the bucket, nor a table of owners precomputed from a
// list of identities). A nil *OwnerKey is the unkeyed OwnerHash of
// earlier edges.
type OwnerKey struct {
	secret []byte
}

// NewOwnerKey returns the key of secret, at least MinOwnerKey bytes
// (ErrOwnerKey). The secret is copied.
func NewOwnerKey(secret []byte) (*OwnerKey, error) {
	if len(secret) < MinOwnerKey {
		return nil, fmt.Errorf("%d bytes, want at least %d: %w", len(secret), MinOwnerKey, ErrOwnerKey)
	}
	return &OwnerKey{secret: append([]byte(nil), secret...)}, nil
}

// ownerKeyedPrefix marks a keyed owner; an unkeyed one starts "sha256:".
const (
	ownerKeyedPrefix   = "hmac-sha256:"
	ownerUnkeyedPrefix = "sha256:"
)

// Hash is the owner of a session created by identity: "hmac-sha256:" and
// the hex HMAC-SHA256 under the key of the domain-separated identity;
// with a nil key, OwnerHash(identity). An empty identity yields "".
func (k *OwnerKey) Hash(identity string) string {
	if k == nil {
		return OwnerHash(identity)
	}
	if identity == "" {
		return ""
	}
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte("fleetgate/session-owner\x00"))
	m.Write([]byte(identity))
	return ownerKeyedPrefix + hex.EncodeToString(m.Sum(nil))
}

// Unkeyed reports whether stored is the unkeyed owner of identity, as an
// edge without a key (or of an earlier version) wrote it: a keyed edge
// still serves such a record to its owner, and rewrites its owner keyed
// when it takes the session over. False for an empty identity.
func (k *OwnerKey) Unkeyed(stored, identity string) bool {
	return identity != "" && strings.HasPrefix(stored, ownerUnkeyedPrefix) && stored == OwnerHash(identity)
}

// Owns reports whether stored, a record's owner, is identity's: keyed by
// k, or unkeyed (Unkeyed).
func (k *OwnerKey) Owns(stored, identity string) bool {
	return stored == k.Hash(identity) || k.Unkeyed(stored, identity)
}
