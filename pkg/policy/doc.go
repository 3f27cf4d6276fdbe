// Package policy is fleetgate's tool policy: the authorization section of
// the fleet config, compiled once per policy generation into CEL programs,
// and the decision of which tools, prompts and resources a caller may see
// and use.
//
// A section has a default (allow or deny) and rules. A rule selects items
// by kind and glob (Go path.Match over exposed names and resource URIs;
// a rule that names no kind selects every item) and, optionally, by a CEL
// condition over claims, identity, group and item (alias tool). A
// matching deny wins over every allow; the default decides when no rule
// matches; no section allows everything. An evaluation error fails
// closed: it counts as a match for a deny rule and as no match for an
// allow rule. Globs are checked before CEL, and an expression that does
// not read the item runs once per caller, not once per item.
//
// The visible set of a caller over one view is computed by
// Policy.Visible and cached by Cache, keyed by the subject key, the view
// generation and the policy generation, so a cached caller runs no CEL.
// The subject key hashes the issuer, the identity, the group and every
// claim: a refreshed token with other roles gets its own visible set,
// and a refresh that only moves exp or iat costs one evaluation.
//
// Bounds: MaxSectionBytes, MaxRules, MaxPatterns, MaxPatternBytes and
// MaxWhenBytes at parse; parser depth 32, comprehension nesting 2 and no
// typed string or bytes concatenation at compile; a runtime cost limit of
// 10,000 per evaluation with calls charged by the bytes and elements they
// touch, a budget of 2,000,000 per Visible or Decide call, and
// MaxClaimsBytes of claims. Past a bound, conditions fail closed.
//
// The package imports nothing of fleetgate's.
package policy
