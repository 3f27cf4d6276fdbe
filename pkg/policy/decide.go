package policy

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"sync/atomic"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// Kind is the kind of an item a rule selects.
type Kind uint8

// Item kinds.
const (
	KindTool Kind = iota
	KindPrompt
	KindResource
	kindCount
)

func (k Kind) String() string {
	switch k {
	case KindTool:
		return "tool"
	case KindPrompt:
		return "prompt"
	case KindResource:
		return "resource"
	}
	return "unknown"
}

// Subject is the caller a decision is for. Build it with TokenSubject or
// HeaderSubject once per verified token (or identity header value) and
// keep it with the session or the token cache: its cache key is computed
// once, here.
type Subject struct {
	identity, group string
	claims          map[string]any
	key             [32]byte
	oversized       bool
}

// MaxClaimsBytes bounds the JSON of a subject's claims: the conditions of
// a subject with more fail closed (a deny rule with a when matches, an
// allow rule with one does not), as an access token that large is not one
// an issuer sends.
const MaxClaimsBytes = 16 << 10

// TokenSubject is a bearer-token caller: identity is the token's sub
// (the edge accepts one issuer; iss is in claims), claims are the token's
// claims as decoded from JSON (map[string]any, []any, float64, string,
// bool). group is the edge's group. The subject must not be changed
// after this call (the claims map is kept, not copied).
func TokenSubject(iss, sub, group string, claims map[string]any) Subject {
	return newSubject(iss, sub, group, claims)
}

// HeaderSubject is a caller named by a trusted identity header: identity
// is the header's value and claims are empty.
func HeaderSubject(identity, group string) Subject {
	return newSubject("", identity, group, nil)
}

var uncacheable atomic.Uint64

// newSubject computes the cache key: SHA-256 over the issuer, the
// identity, the group and the canonical JSON of every claim (encoding/json
// sorts map keys). Every claim is in the key, so a refreshed token whose
// roles changed never sees the visible set of the old token; a refresh
// that changes only exp or iat misses the cache once and costs one policy
// evaluation per refresh.
func newSubject(iss, identity, group string, claims map[string]any) Subject {
	s := Subject{identity: identity, group: group, claims: claims}
	h := sha256.New()
	for _, part := range []string{iss, identity, group} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	if len(claims) > 0 {
		b, err := json.Marshal(claims)
		s.oversized = err != nil || len(b) > MaxClaimsBytes
		if err != nil { // not JSON-shaped: a key no other subject has
			var n [8]byte
			binary.BigEndian.PutUint64(n[:], uncacheable.Add(1))
			b = append([]byte("\x00uncacheable"), n[:]...)
		}
		h.Write(b)
	}
	h.Sum(s.key[:0])
	return s
}

// Identity is the identity the expressions see.
func (s Subject) Identity() string { return s.identity }

// Key is the subject's cache key.
func (s Subject) Key() [32]byte { return s.key }

// Item is one tool, prompt or resource of a group's view.
type Item struct {
	Kind Kind
	// Name is the exposed tool or prompt name, or the resource URI.
	Name    string
	Backend string
	// Annotations of the definition (tools' annotations), nil where there
	// are none. Values as decoded from JSON.
	Annotations map[string]any
}

// celValue is the item as the expressions see it.
func (it Item) celValue() ref.Val {
	ann := it.Annotations
	if ann == nil {
		ann = map[string]any{}
	}
	return types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{
		"kind": it.Kind.String(), "name": it.Name, "backend": it.Backend, "annotations": ann,
	})
}

// itemRef is the item being decided: one of a set, or a lone one whose
// CEL value is built on first use.
type itemRef struct {
	set *ItemSet
	i   int
	one *Item
	v   ref.Val
}

func (r *itemRef) value() ref.Val {
	if r.set != nil {
		return r.set.value(r.i)
	}
	if r.v == nil {
		r.v = r.one.celValue()
	}
	return r.v
}

// Decision is the outcome for one item. Rule names the deny rule that
// refused it, or the allow rule that admitted it under default deny; it
// is empty when the default decided.
type Decision struct {
	Allowed bool
	Rule    string
}

// activation resolves the CEL variables of one subject and one item.
type activation struct {
	claims, identity, group, item ref.Val
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case "claims":
		return a.claims, true
	case "identity":
		return a.identity, true
	case "group":
		return a.group, true
	case "item", "tool":
		return a.item, a.item != nil
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

// evaluator decides items for one subject; it memoises the expressions
// that do not read the item. Not safe for concurrent use.
type evaluator struct {
	p    *Policy
	act  activation
	memo []int8 // per rule: 0 not yet, 1 matches, -1 does not
	// spent is the runtime cost of this subject's evaluations so far;
	// past budget, evaluations fail closed without running (exhausted).
	spent     uint64
	exhausted bool
	oversized bool // the claims exceed MaxClaimsBytes: every condition fails closed
}

// budget bounds the total runtime cost of one Visible or Decide call (a
// thousand items under twenty rules of simple conditions cost about
// 200,000).
const budget = 2_000_000

func (p *Policy) evaluator(s Subject) *evaluator {
	claims := s.claims
	if claims == nil {
		claims = map[string]any{}
	}
	return &evaluator{p: p, memo: make([]int8, len(p.rules)), oversized: s.oversized, act: activation{
		claims:   types.NewStringInterfaceMap(types.DefaultTypeAdapter, claims),
		identity: types.String(s.identity), group: types.String(s.group),
	}}
}

// matches evaluates a rule's condition whose globs already apply. An
// evaluation error, or a value that is not a bool, counts as a match for
// a deny rule and as no match for an allow rule (fail closed).
func (e *evaluator) matches(r *rule, item *itemRef) bool {
	if r.prog == nil {
		return true
	}
	if !r.perItem {
		if m := e.memo[r.index]; m != 0 {
			return m > 0
		}
	}
	if r.perItem {
		e.act.item = item.value()
	} else {
		e.act.item = nil
	}
	m := r.deny // an error, or no evaluation at all, fails closed
	switch {
	case e.oversized || e.spent >= budget:
		e.exhausted = true
	default:
		out, det, err := r.prog.Eval(&e.act)
		if det != nil && det.ActualCost() != nil {
			e.spent += *det.ActualCost()
		}
		if b, ok := out.(types.Bool); err == nil && ok {
			m = bool(b)
		}
	}
	if !r.perItem {
		e.memo[r.index] = 1
		if !m {
			e.memo[r.index] = -1
		}
	}
	return m
}

func (e *evaluator) decide(k Kind, name string, item *itemRef) Decision {
	for _, r := range e.p.denies {
		if r.applies(k, name) && e.matches(r, item) {
			return Decision{Allowed: false, Rule: r.name}
		}
	}
	if !e.p.deny {
		return Decision{Allowed: true} // allow rules cannot change it
	}
	for _, r := range e.p.allows {
		if r.applies(k, name) && e.matches(r, item) {
			return Decision{Allowed: true, Rule: r.name}
		}
	}
	return Decision{Allowed: false}
}

// Decide decides one item for a subject. A nil policy allows everything.
func (p *Policy) Decide(s Subject, it Item) Decision {
	if p == nil || (len(p.rules) == 0 && !p.deny) {
		return Decision{Allowed: true}
	}
	return p.evaluator(s).decide(it.Kind, it.Name, &itemRef{one: &it})
}

// Visible decides every item of the set for a subject, evaluating each
// expression that does not read the item once. The result is immutable.
func (p *Policy) Visible(s Subject, set *ItemSet) *Visibility {
	v := &Visibility{set: set, policyGen: p.Generation(), bits: make([]uint64, (set.Len()+63)/64)}
	if p == nil || (len(p.rules) == 0 && !p.deny) {
		for i := range set.items {
			v.bits[i/64] |= 1 << (i % 64)
		}
		return v
	}
	e := p.evaluator(s)
	ref := itemRef{set: set}
	for i := range set.items {
		ref.i = i
		if e.decide(set.items[i].Kind, set.items[i].Name, &ref).Allowed {
			v.bits[i/64] |= 1 << (i % 64)
		}
	}
	v.failedClosed = e.exhausted
	return v
}
