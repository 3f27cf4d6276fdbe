// Package inputstate seals the requestState of the 2026-07-28 revision's
// input-required results as an edge hands them to its clients.
//
// A backend that needs input during a request answers with input requests
// and an opaque requestState; the client answers them and retries the
// request with the state. The edge does not give the client the backend's
// state as it is: it seals it (AES-256-GCM, package crypto/cipher) under a
// key every edge of the group shares, with an expiry, bound to the caller
// and the request, so that the retry may reach any edge of the group, a
// state altered, expired or replayed by another caller is refused, and
// nothing of the backend's state is readable by the client.
//
//	s, _ := inputstate.New(keyFileContent)
//	b := inputstate.Binding{Identity: "alice", Method: "tools/call", Target: "alpha_confirm"}
//	sealed, _ := s.Seal(b, backendState, time.Now().Add(inputstate.DefaultLifetime))
//	// ... the client retries with sealed, on any edge of the group:
//	backendState, err := s.Open(b, sealed, time.Now())
package inputstate

import "time"

// DefaultLifetime is how long a sealed state opens.
const DefaultLifetime = 10 * time.Minute
