// Package conformance is the MCP backend the official conformance suite
// (@modelcontextprotocol/conformance, server mode) is run against, directly
// and through an edge: a go-sdk server over streamable HTTP that offers
// exactly the tools, prompts, resources, resource template, completions,
// logging and subscriptions the suite's server scenarios call, with the
// results they check. Its behaviour follows the suite's own reference
// server (examples/servers/typescript/everything-server.ts of the pinned
// suite version).
//
//	b := conformance.New(nil)
//	if err := b.Start("127.0.0.1:0"); err != nil { ... }
//	defer b.Stop()
//	url := b.URL() // http://127.0.0.1:PORT/mcp
//
// An edge whose naming keeps backend names (conflicts: priority) exposes
// these names unchanged. For an edge that still prefixes every name with
// "<backend>_", Options.TrimPrefix "test_" and a backend named "test" give
// the same exposed names for tools and prompts (resources keep their URIs).
//
// The driver that runs the suite is cmd/conformance; package suite runs and
// reads the suite's CLI; `make conformance` ties them together.
package conformance
