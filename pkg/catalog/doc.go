// Package catalog holds the tool, resource and prompt catalogs of MCP
// backends and the View a group of them presents to clients.
//
// Definitions are carried as json.RawMessage exactly as a backend returned
// them, so fields this package does not know survive the trip to clients.
// Everything here is a pure function of its inputs: no I/O, no clock, no
// goroutines.
//
// The controller drives it per backend and per group:
//
//	tools, rejected := catalog.FilterTools(listed) // drop what a go-sdk Server would panic on
//	digest, err := catalog.Digest(tools)           // the backend's digest in GET /v1/state
//	...
//	view := catalog.Aggregate([]catalog.Source{
//		{Backend: "alpha", Tools: alphaTools},
//		{Backend: "beta", Tools: betaTools, Prompts: betaPrompts},
//	}, &catalog.AggregateOptions{Separator: "_"})
//	// view.Tools: exposed definitions; view.Digest: the group's registry digest
//
// and an edge, on each new generation, swaps its View and applies the
// difference to its sessions:
//
//	next := catalog.Aggregate(sources, &catalog.AggregateOptions{Previous: current})
//	delta := catalog.Diff(current, next)
//	// AddTool for delta.Added and delta.Changed, then RemoveTools(delta.Removed...)
//	entry, ok := next.Tool(req.Params.Name) // route tools/call to entry.Backend as entry.Original
//
// # Digest
//
// The catalog digest (projection v1) is "sha256:" followed by the hex
// SHA-256 of the RFC 8785 canonical JSON of the array of tools sorted by
// name, each reduced to name, title, description, inputSchema,
// outputSchema, annotations and execution. A member is omitted when absent
// and kept, whatever its value (null included), when present. Names are
// compared byte-wise; tools sharing a name are ordered by their canonical
// projection. The same function gives a backend's digest (own names) and a
// session's registry digest (exposed names); View.Digest equals Digest of
// the View's tool definitions.
//
// # Validation
//
// A tool is kept when it is a JSON object of at most MaxDefinitionSize
// bytes whose name is 1 to 128 bytes of [A-Za-z0-9_.-], whose inputSchema
// is an object with "type": "object", whose outputSchema, if present and
// not null, is too, whose x-mcp-header annotations pass the go-sdk's rules,
// and whose projected members canonicalize. A resource needs a uri and a
// name, a prompt a name. Rejections are typed errors matching
// ErrInvalidTool, ErrInvalidResource and ErrInvalidPrompt.
//
// # Exposed names
//
// Package naming decides them (AggregateOptions.Naming: the strategy, the
// backends' order and their include, exclude and rename rules). By default
// (nil Naming: the prefix strategy, backends in name order) a tool or
// prompt is exposed as <backend><separator><name>. When two definitions
// ask for the same exposed name (backend "a_b" with tool "c" and backend
// "a" with tool "b_c"), the one whose backend comes first keeps it; each
// other one gets the name followed by "_2", "_3", ... (the first not
// otherwise taken), cut so the whole stays within 128 bytes. A name longer
// than 128 bytes is treated the same way, with no keeper. Every such
// rename is listed in View.Collisions. A resource keeps its URI (unless
// renamed); when several backends offer one URI, the backend that comes
// first keeps it. Sources marked Reserve take part in the naming but are
// not served, so that names do not move when a backend's health does.
//
// Aggregate's result depends only on the set of its inputs and the
// options, never on the order of the inputs. A View is immutable and shared by all sessions of a generation.
//
// # Cost
//
// Canonicalizing tool definitions is most of the work. Pass the previous
// generation's View as AggregateOptions.Previous: definitions that did not
// change are then taken from it, already validated and canonicalized, and
// their renamed Defs are shared; the result is identical either way.
package catalog
