// Package backendnet decides where the gateway may connect to reach a
// backend: never to link-local addresses (169.254.0.0/16, fe80::/10) or
// cloud metadata services (169.254.169.254, fd00:ec2::254,
// 100.100.100.200, metadata.google.internal...), unless the backend's
// config says allow_link_local: true; and never with user info in the URL.
//
// The check is made twice: on the config (CheckURL, CheckHost: literal
// addresses and metadata names), and on every connection (Control, a
// net.Dialer ControlContext that sees the address actually dialed, so a
// name that resolves to a link-local address is refused too). A dialer
// shared by many backends refuses by default; Scope marks the requests of
// a backend that is allowed (WithAllowLinkLocal on the request context,
// which net/http's dial keeps).
//
// Connections are pooled by host: a backend allowed link-local addresses
// shares idle connections with any other backend of the same host name.
// With a proxy from the environment, the dialer checks the proxy's
// address only.
package backendnet
