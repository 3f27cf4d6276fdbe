// Package credential holds the credentials the gateway sends to backends:
// header values given by reference, {env: NAME} or {file: /path}, never
// literally, and resolved by each process that talks to the backend (the
// controller's prober and every edge), from its own environment and files.
//
// A Ref is what config, events, state, logs and errors carry; its String
// prints the reference only. Resolve gives a Secret, whose every printed
// or encoded form (fmt, JSON, text, slog, zerolog) is "[redacted]"; only
// Reveal gives the value. Headers are checked by CheckName and
// Headers.Validate: RFC 9110 tokens, at most MaxHeaders, none of the
// headers the transport or the MCP protocol own (Host, Content-Length,
// Transfer-Encoding, Connection, Mcp-Session-Id, Mcp-Protocol-Version...).
//
// Transport is the http.RoundTripper of one backend: it sets the resolved
// headers on a clone of every request, refuses requests to another origin
// than the backend's, resolves the references again every Recheck (a
// rotated file is picked up) or on Refresh, and while one does not resolve
// fails every request with a *ResolveError naming the backend, the header
// and the reference (errors.Is ErrUnresolved), calling OnError once per
// outage.
//
// No error of the package quotes a value, a malformed reference or an
// invalid header name (any of them may be a pasted secret).
package credential
