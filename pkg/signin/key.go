package signin

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// MinKey is the shortest sign-in key secret taken, in bytes.
const MinKey = 32

// Labels separating the keys derived from one secret.
const (
	labelState = "fleetgate sign-in state v1\x00"
	labelVault = "fleetgate sign-in refresh token v1\x00"
)

// ErrRefused: a sealed value fails the integrity check (altered, sealed
// under another key, or for another identity or backend).
var ErrRefused = errors.New("sealed value refused: it fails the integrity check or was issued for another caller or backend")

// ErrMalformed: a sealed value is not one a Key made.
var ErrMalformed = errors.New("sealed value malformed")

// Key seals the sign-in states and the refresh tokens (AES-256-GCM, a key
// of each use derived from the secret every edge is given). It is safe
// for concurrent use.
type Key struct {
	state, vault cipher.AEAD
}

// NewKey derives a Key from secret (the content of --signin-key-file; at
// least MinKey bytes).
func NewKey(secret []byte) (*Key, error) {
	if len(secret) < MinKey {
		return nil, fmt.Errorf("sign-in key: %d bytes, want at least %d", len(secret), MinKey)
	}
	k := &Key{}
	for _, d := range []struct {
		label string
		dst   *cipher.AEAD
	}{{labelState, &k.state}, {labelVault, &k.vault}} {
		sum := sha256.Sum256(append([]byte(d.label), secret...))
		block, err := aes.NewCipher(sum[:])
		if err != nil {
			return nil, fmt.Errorf("sign-in key: %w", err)
		}
		if *d.dst, err = cipher.NewGCM(block); err != nil {
			return nil, fmt.Errorf("sign-in key: %w", err)
		}
	}
	return k, nil
}

// NewRandomKey is a Key of its own: what it seals opens on this process
// only (an edge given no key file: sign-ins do not survive a move).
func NewRandomKey() *Key {
	k, err := NewKey([]byte(rand.Text() + rand.Text()))
	if err != nil {
		panic(err) // cannot be: the secret is long enough
	}
	return k
}

// aad binds the fields, each length-prefixed, to a seal.
func aad(label string, fields ...string) []byte {
	out := []byte(label)
	for _, f := range fields {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	return out
}

const nonceSize, tagSize = 12, 16

func seal(a cipher.AEAD, plain, ad []byte) []byte {
	nonce := make([]byte, nonceSize, nonceSize+len(plain)+tagSize)
	_, _ = rand.Read(nonce)
	return a.Seal(nonce, nonce, plain, ad)
}

func open(a cipher.AEAD, sealed, ad []byte) ([]byte, error) {
	if len(sealed) < nonceSize+tagSize {
		return nil, ErrMalformed
	}
	plain, err := a.Open(nil, sealed[:nonceSize], sealed[nonceSize:], ad)
	if err != nil {
		return nil, ErrRefused
	}
	return plain, nil
}
