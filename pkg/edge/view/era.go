package view

import (
	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/catalog/fromstate"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// A backend that speaks both protocol generations may list different
// definitions in each (events.Catalog.Stateless). The edge then serves
// each client era what that backend serves it: the Served value of a
// generation holds the view of the session-based revisions, and, in
// Stateless, the one of the stateless generation, built by the very
// function the controller uses (fromstate.StatelessView). Every path that
// serves a client (lists, list_changed, find_tool, calls, prompts and
// resources) starts from Era(revision of the client). The generation's
// one digest is catalog.ViewDigest of both (Digest).

// buildStateless is the Served value of the stateless generation of
// group g whose session-based one is s (nil when g's view does not differ
// by era), sharing the go-sdk values of prev's.
func buildStateless(g *events.Group, sep string, s, prev *Served) *Served {
	prevEra := prev.Era(FirstStateless)
	v := fromstate.StatelessView(g, sep, prevEra.Catalog)
	if v == nil {
		return nil
	}
	st := build(s.Gen, v, prevEra)
	st.Backends, st.Revisions, st.StatelessOnly = s.Backends, s.Revisions, s.StatelessOnly
	return st
}

// FirstStateless is the first revision of the stateless generation.
const FirstStateless = "2026-07-28"

// Stateless reports whether rev is a revision of the stateless generation
// (a date from FirstStateless on).
func Stateless(rev string) bool { return len(rev) == len(FirstStateless) && rev >= FirstStateless }

// Era is what a client of revision rev is served: s's Stateless value
// for the stateless generation when it has one, s otherwise.
func (s *Served) Era(rev string) *Served {
	if s != nil && s.Stateless != nil && Stateless(rev) {
		return s.Stateless
	}
	return s
}

// Digest is the generation's one catalog digest (catalog.ViewDigest of
// both eras' views): its Catalog's when both eras are served the same
// tools, the era digest of both otherwise.
func (s *Served) Digest() string {
	return catalog.ViewDigest(s.Catalog, s.Era(FirstStateless).Catalog)
}

// Era is the change a client is told: of the stateless generation's lists
// to a client of that generation (stateless set) when the eras are served
// differently, of the others' otherwise.
func (c Change) Era(stateless bool) Change {
	if stateless && c.Eras {
		return Change{Tools: c.StatelessTools, Prompts: c.StatelessPrompts, Resources: c.StatelessResources}
	}
	return Change{Tools: c.Tools, Prompts: c.Prompts, Resources: c.Resources}
}
