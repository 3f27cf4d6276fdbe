// Package view is what an edge serves at one generation: Served holds the
// group's catalog view and the go-sdk values built from it (tools, prompts
// and resources, by name and as sorted lists), the configs of the
// advertisable backends, and in optimizer mode the search Index of the
// tools. It is pure: built once per view change from the folded event
// state, and shared read-only by every session holding it.
//
// The driving loop of an edge:
//
//	next := view.Build(gen, group, fallbackSeparator, prev) // names: the group's naming in the state
//	ch := view.Between(prev, next)      // what sessions are told changed
//	next.Index = view.NewIndex(next, pinned, prev.Index) // optimizer mode
//	// each session: view.ListTools(next, req) ...
package view
