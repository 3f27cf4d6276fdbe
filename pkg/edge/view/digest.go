package view

import (
	"encoding/json"
	"sync"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

// toolDefsOnce holds the served tool definitions of a Served value and
// their catalog digest, made on first use (ToolDefs).
type toolDefsOnce struct {
	once   sync.Once
	digest string
	raws   []json.RawMessage
}

// ToolDefs are the definitions of s's tools as s serves them, in served
// order, and their catalog digest: what a complete tools/list traversal
// of s yields (the convergence evidence's current digest). Computed once
// per served value, on first use; safe for concurrent use.
func (s *Served) ToolDefs() (digest string, raws []json.RawMessage) {
	d := &s.defs
	d.once.Do(func() {
		d.raws = make([]json.RawMessage, 0, len(s.ToolList))
		for _, t := range s.ToolList {
			if b := s.ToolDef(t); b != nil {
				d.raws = append(d.raws, b)
			}
		}
		d.digest, _ = catalog.Digest(d.raws)
	})
	return d.digest, d.raws
}
