package inputstate

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors of Open, matched with errors.Is.
var (
	// ErrMalformed: the state is not one a Sealer made (wrong prefix,
	// encoding or size).
	ErrMalformed = errors.New("requestState malformed")
	// ErrRefused: the state fails the integrity check: altered, sealed
	// with another key, or sealed for another caller or tool.
	ErrRefused = errors.New("requestState refused: it fails the integrity check, or was issued to another caller or for another request")
	// ErrExpired: the state is past its lifetime.
	ErrExpired = errors.New("requestState expired")
	// ErrTooLarge: the backend's own state is over MaxInner (Seal).
	ErrTooLarge = errors.New("requestState too large")
)

// Bounds of a state.
const (
	// MaxInner is the largest backend state a Sealer seals.
	MaxInner = 48 << 10
	// maxSealed bounds a sealed state before it is decoded.
	maxSealed = len(prefix) + (MaxInner+8+nonceSize+tagSize)*4/3 + 8
	prefix    = "fg1."
	nonceSize = 12
	tagSize   = 16
	// keyLabel separates the sealing key from any other use of the file.
	keyLabel = "fleetgate input requestState v1\x00"
	// relayLabel separates the key of the held-call relay (RelayKey).
	relayLabel = "fleetgate held-call relay v1\x00"
)

// Binding is what a state is issued for: Open refuses it for anything
// else. Identity is the caller's (its token's subject, or the identity
// header's value; "" for an anonymous caller), Tool the exposed name of
// the tool, prompt or resource the request asked for, with its method.
type Binding struct {
	Identity string
	Method   string
	Target   string
}

// aad is the additional data binding b into a state's seal: each field
// length-prefixed, so that no two bindings encode alike whatever bytes
// they hold.
func (b Binding) aad() []byte {
	out := []byte(keyLabel)
	for _, f := range []string{b.Identity, b.Method, b.Target} {
		out = binary.BigEndian.AppendUint32(out, uint32(len(f)))
		out = append(out, f...)
	}
	return out
}

// A Sealer seals the requestState of an input-required result so that a
// client holds it opaque and unaltered: AES-256-GCM under a key every
// edge of a group shares, over the backend's own state and an expiry,
// bound to the caller and the request. A Sealer is safe for concurrent
// use.
type Sealer struct {
	aead  cipher.AEAD
	relay cipher.AEAD
}

// New returns a Sealer whose key is derived from secret (the content of
// the key file every edge of a group is given; at least 32 bytes).
func New(secret []byte) (*Sealer, error) {
	if len(secret) < 32 {
		return nil, fmt.Errorf("input state key: %d bytes, want at least 32", len(secret))
	}
	aead, err := derive(keyLabel, secret)
	if err != nil {
		return nil, err
	}
	relay, err := derive(relayLabel, secret)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead, relay: relay}, nil
}

// derive is the AES-256-GCM of the key label derives from secret.
func derive(label string, secret []byte) (cipher.AEAD, error) {
	key := sha256.Sum256(append([]byte(label), secret...))
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, fmt.Errorf("input state key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("input state key: %w", err)
	}
	return aead, nil
}

// RelayKey is the AEAD under which the edges of the group seal the
// messages of the held-call relay to each other (package heldrelay): a
// key of its own derived from the same secret, so that only a holder of
// the group's key file can forward a retry, or answer one.
func (s *Sealer) RelayKey() cipher.AEAD { return s.relay }

// NewRandom returns a Sealer with a key of its own: states it seals open
// only on the same process (an edge given no key file).
func NewRandom() *Sealer {
	s, err := New([]byte(rand.Text() + rand.Text()))
	if err != nil {
		panic(err) // cannot be: the secret is long enough
	}
	return s
}

// Seal returns the state a client is given for the backend's state inner,
// issued for b, valid until expires.
func (s *Sealer) Seal(b Binding, inner string, expires time.Time) (string, error) {
	if len(inner) > MaxInner {
		return "", fmt.Errorf("seal: %d bytes: %w", len(inner), ErrTooLarge)
	}
	plain := make([]byte, 8, 8+len(inner))
	binary.BigEndian.PutUint64(plain, uint64(expires.Unix()))
	plain = append(plain, inner...)
	nonce := make([]byte, nonceSize, nonceSize+len(plain)+tagSize)
	_, _ = rand.Read(nonce)
	return prefix + base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, plain, b.aad())), nil
}

// Open returns the backend's state sealed in state, when state was sealed
// by a Sealer of the same key for b and is not expired at now.
func (s *Sealer) Open(b Binding, state string, now time.Time) (string, error) {
	if len(state) > maxSealed {
		return "", fmt.Errorf("open: %d bytes: %w", len(state), ErrMalformed)
	}
	enc, ok := strings.CutPrefix(state, prefix)
	if !ok {
		return "", fmt.Errorf("open: %w", ErrMalformed)
	}
	raw, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil || len(raw) < nonceSize+tagSize+8 {
		return "", fmt.Errorf("open: %w", ErrMalformed)
	}
	plain, err := s.aead.Open(nil, raw[:nonceSize], raw[nonceSize:], b.aad())
	if err != nil {
		return "", fmt.Errorf("open: %w", ErrRefused)
	}
	if exp := int64(binary.BigEndian.Uint64(plain)); now.Unix() > exp {
		return "", fmt.Errorf("open: expired at %s: %w", time.Unix(exp, 0).UTC().Format(time.RFC3339), ErrExpired)
	}
	return string(plain[8:]), nil
}
