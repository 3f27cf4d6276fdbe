// Package clientaddr tells which address a request to the edge comes
// from, for what the edge charges to a client address (the failed
// authentication budget, the refusal log's rate): the connection's peer,
// unless that peer is a proxy the operator trusts, in which case the
// address that proxy says it forwarded for, in X-Forwarded-For or
// Forwarded (RFC 7239).
//
// The forwarding header is read right to left, the order in which the
// proxies appended to it: the first address that is not a trusted proxy
// is the client's. What a client writes into the header itself lies to
// the left of what the trusted proxies appended, so it is never reached
// while a trusted proxy stands between; a peer that is not trusted is
// taken as it is and its headers are ignored. The header is bounded
// (only its last MaxHeader bytes and MaxHops entries are read) and an
// entry that does not parse ends the walk at the last trusted hop.
//
//	r, err := clientaddr.New(&clientaddr.Options{Trusted: "10.0.0.0/8"})
//	key := r.Addr(req) // "192.0.2.7", or "2001:db8:1:2::/64"
package clientaddr
