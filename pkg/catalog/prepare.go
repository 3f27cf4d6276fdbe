package catalog

import (
	"bytes"
	"crypto/sha256"
)

// Parsing, validating and canonicalizing a tool is most of the cost of
// Aggregate (the JCS library is the bulk of it), while from one generation
// to the next almost every definition is byte-for-byte the same. So each
// View keeps the prepared form of the tools it was built from, keyed by the
// SHA-256 of their bytes, and Aggregate given AggregateOptions.Previous
// takes unchanged tools from there. Prepared tools are immutable and shared
// by every View that saw the same bytes; the result of Aggregate does not
// depend on whether they came from a Previous View.

// preparedKey identifies a definition by the SHA-256 of its bytes.
type preparedKey [sha256.Size]byte

// preparedTool is a tool definition parsed, validated and projected once.
type preparedTool struct {
	tool          // its object is over a private copy of the bytes
	reason string // why the definition is invalid; empty when valid
	// projSum is the SHA-256 of the canonical projection under the empty
	// name: two Views serving tools under one exposed name serve the same
	// projection exactly when their projSums are equal.
	projSum [sha256.Size]byte
}

// prepareTool returns the prepared form of raw, from this Aggregate call,
// from the Previous View, or by parsing it.
func (a *aggregator) prepareTool(raw []byte) *preparedTool {
	key := preparedKey(sha256.Sum256(raw))
	if p, ok := a.view.prepared[key]; ok {
		return p
	}
	p, ok := a.prev.prepared[key]
	if !ok {
		t, err := parseTool(bytes.Clone(raw))
		p = &preparedTool{tool: t}
		if err != nil {
			p.reason = err.(*InvalidToolError).Reason
		} else {
			p.projSum = sha256.Sum256(t.proj.appendCanonical(nil, ""))
		}
	}
	a.view.prepared[key] = p
	return p
}
