package prober

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

// A backend that speaks both protocol generations (it answers
// initialize, and server/discover with a revision of the stateless
// generation) is listed in both: its session-based lists over the
// session, then its stateless ones over a session of the stateless
// generation of their own (a fresh one, so that the go-sdk's list cache
// never answers for the backend), through the same wire (its bounds,
// credentials and capture); a session of the stateless generation stays
// open for its list changes (session.watch). Where the two differ, the catalog carries
// the stateless lists too (Catalog.Stateless): the edges serve each
// client era what the backend serves it.

// listEra lists the stateless generation's catalog of the backend of
// session s, whose session-based catalog is c: nil when it is the same
// as c's, an error when the listing failed (the discovery failed: it is
// tried again, rather than a catalog that would serve clients of the
// stateless generation the wrong lists).
func (p *Prober) listEra(s *session, c Catalog) (*catalog.EraLists, error) {
	ctx, cancel := context.WithTimeout(s.calls, p.discoveryTimeout)
	defer cancel()
	hc := &http.Client{Transport: s.wire, CheckRedirect: noRedirects, Jar: p.jar}
	cs, err := p.dialStateless(ctx, p.plain, hc)
	if err != nil {
		return nil, fmt.Errorf("discover %s: stateless lists: %w", p.target, err)
	}
	defer cs.Close()
	e, err := p.listOver(ctx, s, cs)
	if err != nil {
		return nil, fmt.Errorf("discover %s: stateless lists: %w", p.target, err)
	}
	if s.watch == nil {
		// A change of the stateless lists alone is announced on that
		// generation's subscriptions/listen: a session of the prober's
		// client (its list_changed handlers) stays open for it.
		if s.watch, err = p.dialStateless(s.calls, p.client, hc); err != nil {
			p.log.Debug().Err(err).Msg("backend's stateless list changes not watched")
		}
	}
	if e.Digest == c.Digest && sameLists(e.Tools, c.Tools) && sameLists(e.Resources, c.Resources) &&
		sameLists(e.Prompts, c.Prompts) && sameLists(e.ResourceTemplates, c.ResourceTemplates) {
		return nil, nil
	}
	return &catalog.EraLists{Tools: e.Tools, Resources: e.Resources, Prompts: e.Prompts,
		ResourceTemplates: e.ResourceTemplates, Digest: e.Digest}, nil
}

// sameLists reports whether two canonical lists hold the same
// definitions in the same order.
func sameLists(a, b []json.RawMessage) bool {
	return slices.EqualFunc(a, b, func(x, y json.RawMessage) bool { return bytes.Equal(x, y) })
}
