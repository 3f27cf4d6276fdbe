// Package heldrelay carries the retry of a held call to the edge that
// holds it, over NATS.
//
// A 2026-07-28 client that calls a tool of a backend of the session-based
// revisions is asked the backend's requests (elicitation, sampling, roots)
// as input requests: the edge that started the call holds it open, and the
// client's retry with the answer must reach that call. A retry that a load
// balancer sends to another edge of the group is forwarded by that edge to
// the holder with a request on the holder's subject (Subject), and the
// holder's answer (the call's result, or its next input request) goes back
// to the client from the edge it reached.
//
// The subject is fleetgate.held.<edge>: only edge users may publish or
// subscribe under fleetgate.held (package natsnode), and they answer a
// request once on the requester's inbox (allow_responses). Every message
// is sealed with the group's relay key (envelope.go): an edge user
// without the group's key file reads nothing of it, forwards no retry
// and answers none in the holder's place. A forwarded retry
// carries the sealed requestState as the client sent it, the caller's
// verified identity as the forwarding edge established it, the exposed
// tool and its backend, and the client's input responses; the holder
// opens the state itself and checks it was issued to that caller for that
// call before it answers the call. Messages are bounded (MaxRetry,
// MaxOutcome and the connection's max payload), each side waits a bounded
// time, and the holder runs at most MaxInflight retries at once. Neither
// side logs the responses or the result.
package heldrelay
