package signin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// Record is what a sign-in keeps in the bucket, sealed under the key and
// bound to its identity and backend: the refresh token and what a refresh
// needs (the client, the token endpoint, the resource), so that any edge
// can refresh it.
type Record struct {
	Identity      string `json:"i"`
	Backend       string `json:"b"`
	Refresh       string `json:"r"`
	ClientID      string `json:"c"`
	TokenEndpoint string `json:"t"`
	Resource      string `json:"s"`
}

// MaxRecord bounds a sealed record read from the bucket.
const MaxRecord = 32 << 10

// KeyOf is the bucket key of identity's sign-in to backend: a hash, so
// that the bucket names no user.
func KeyOf(identity, backend string) string {
	sum := sha256.Sum256(aad("fleetgate sign-in key v1\x00", identity, backend))
	return hex.EncodeToString(sum[:])
}

// SealRecord seals r for the bucket; a record that would seal to more than
// MaxRecord bytes (which no edge would open) is refused.
func (k *Key) SealRecord(r Record) ([]byte, error) {
	plain, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("seal sign-in record: %w", err)
	}
	sealed := seal(k.vault, plain, aad(labelVault, KeyOf(r.Identity, r.Backend)))
	if len(sealed) > MaxRecord {
		return nil, fmt.Errorf("seal sign-in record: %d bytes sealed, over %d: %w", len(sealed), MaxRecord, ErrMalformed)
	}
	return sealed, nil
}

// OpenRecord opens the sealed record stored under bucket key key: it must
// have been sealed by a Key of the same secret for that key's identity and
// backend.
func (k *Key) OpenRecord(key string, sealed []byte) (Record, error) {
	if len(sealed) > MaxRecord {
		return Record{}, fmt.Errorf("open sign-in record: %d bytes: %w", len(sealed), ErrMalformed)
	}
	plain, err := open(k.vault, sealed, aad(labelVault, key))
	if err != nil {
		return Record{}, fmt.Errorf("open sign-in record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(plain, &r); err != nil || r.Refresh == "" || KeyOf(r.Identity, r.Backend) != key {
		return Record{}, fmt.Errorf("open sign-in record: %w", ErrMalformed)
	}
	return r, nil
}

// refreshToken is r's refresh token as a Secret.
func (r Record) refreshToken() credential.Secret { return credential.NewSecret(r.Refresh) }
