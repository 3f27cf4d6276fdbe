// Package naming decides the names a group's tools, prompts and resources
// are exposed under: the aggregation.conflicts strategy of the fleet
// config, the separator, and each backend's include, exclude and rename
// rules. It is a pure leaf: no I/O, no clock, nothing of fleetgate's
// imported.
//
//	spec := &naming.Spec{Separator: "_", Conflicts: naming.Priority, Backends: []naming.BackendRules{
//		{Name: "alpha"},
//		{Name: "beta", Tools: naming.Rules{Exclude: []string{"delete_*"}, Rename: map[string]string{"search": "find_docs"}}},
//	}}
//	if err := spec.Check(); err != nil { ... } // config time: globs, bounds, renames
//	res := naming.Resolve(spec, []naming.Catalog{{Backend: "alpha", Tools: []string{"echo"}}, ...})
//	name, ok := res.Exposed(naming.Tool, "beta", "echo") // "beta_echo", true
//	res.Collisions // every definition that did not get the name it asked for, and what it got
//
// The controller decides names with it and publishes the Spec of every
// group in the event log (naming_changed), so that every edge, replaying the
// log, reaches the very names the controller's view has at each generation
// (package catalog applies a Result to a View).
//
// # Strategies
//
// Prefix (the default) exposes a tool or prompt as
// <backend><separator><name>. Priority exposes names as the backends give
// them; of the backends asking for one name, the one listed first in the
// config keeps it and the others get the prefix. Manual exposes names as
// given; two backends asking for one name is a config error, reported by
// Check for renames and by the controller against the catalogs it knows
// when the config is reloaded or changed through the admin API. A
// collision that appears later (a backend adds a tool) withholds the name
// from every backend asking for it: under Manual no name is ever moved to
// another backend without the operator saying so.
//
// A rename wins over the strategy: it asks for its name before any
// strategy name is given. Resources are identified by URI: a URI is never
// prefixed (rules and renames name URIs), and of backends offering one URI
// the first listed keeps it; the others' resource is withheld.
//
// # Over which backends collisions are resolved
//
// Names are resolved over every backend of the group whose catalog is
// known, advertisable or not; only the advertisable ones are then served.
// Resolving over the advertisable backends only would make names depend on
// health: with alpha and beta both offering echo under Priority, beta's
// echo would be "echo" while alpha is down and "beta_echo" when alpha
// comes back, so a flapping backend would rename another backend's tools
// under its clients, and a client calling "echo" would reach a different
// backend from one minute to the next. Resolving over the known catalogs
// makes a name a function of the configuration and the catalogs only: a
// health change adds or removes whole backends' names, never renames
// anyone's. The price is that a backend whose catalog is known but that is
// down keeps its names reserved (and its rivals prefixed) until it leaves
// the config or its catalog changes.
//
// # Bounds
//
// Rules hold at most MaxPatterns patterns per list, of at most
// MaxPatternLen bytes, and MaxRenames renames of at most MaxRenameLen
// bytes; patterns are path.Match globs and a malformed one is an error.
package naming
