package heldrelay

import (
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// The relay's messages travel sealed (AES-256-GCM under Options.Key, the
// group's key file's relay key, inputstate.Sealer.RelayKey): a NATS user
// allowed on fleetgate.held.> that does not hold the group's key (an edge
// of another group, a tool given an edge seed) reads nothing of a
// forwarded retry (the caller's identity, the state, the input responses)
// or of its answer (the call's result), cannot forward a retry under an
// identity of its choosing, and cannot answer a retry in the holder's
// place. A retry is sealed for the holder's subject; its answer for that
// retry alone (the retry's nonce), so that neither is taken for another.
//
//	"fgh1" | nonce (12) | ciphertext and tag

// envelopePrefix versions the sealed messages.
const envelopePrefix = "fgh1"

// envelopeOverhead is what sealing adds to a message.
const envelopeOverhead = len(envelopePrefix) + 12 + 16

// ErrUnsealed is wrapped by the refusal of a message that is not sealed
// with the group's relay key (or not for this use).
var ErrUnsealed = errors.New("heldrelay: message not sealed with the group's key")

func retryAAD(subject string) []byte { return []byte("fleetgate held retry v1\x00" + subject) }

func outcomeAAD(retryNonce []byte) []byte {
	return append([]byte("fleetgate held outcome v1\x00"), retryNonce...)
}

// seal seals plain for aad; it returns the message and its nonce.
func seal(k cipher.AEAD, aad, plain []byte) (msg, nonce []byte) {
	msg = make([]byte, len(envelopePrefix)+k.NonceSize(), len(envelopePrefix)+k.NonceSize()+len(plain)+k.Overhead())
	copy(msg, envelopePrefix)
	nonce = msg[len(envelopePrefix):]
	_, _ = rand.Read(nonce)
	return k.Seal(msg, nonce, plain, aad), nonce
}

// open opens msg sealed for aad; it returns the content and the nonce.
func open(k cipher.AEAD, aad, msg []byte) (plain, nonce []byte, err error) {
	n := len(envelopePrefix) + k.NonceSize()
	if len(msg) < n+k.Overhead() || string(msg[:len(envelopePrefix)]) != envelopePrefix {
		return nil, nil, fmt.Errorf("%w: %d bytes, not an envelope", ErrUnsealed, len(msg))
	}
	nonce = msg[len(envelopePrefix):n]
	plain, err = k.Open(nil, nonce, msg[n:], aad)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: it fails the integrity check", ErrUnsealed)
	}
	return plain, nonce, nil
}
