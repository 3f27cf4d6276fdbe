package view

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

// Definitions are served as the view holds them: the backend's JSON (the
// bytes the controller discovered, its name replaced by the exposed one),
// never a go-sdk value encoded again (the go-sdk's encoder adds members a
// backend never sent, such as "idempotentHint": false, and drops the ones
// its types lack). The go-sdk values of Served name the items and feed
// the search index; the list results below carry the definitions and
// encode them in place of those values.
//
// Each protocol revision gets the members its schema defines: a member
// that a revision of the protocol defines for a kind of definition and the
// session's revision does not (the 2025-11-25 tasks' "execution" for a
// 2025-06-18 or a 2026-07-28 client, "icons" for a 2025-06-18 one) is
// left out; members no revision defines (a backend's own) are kept, and
// so is everything inside a member. Results lose the members of the
// 2026-07-28 envelope (ttlMs, cacheScope, resultType) on older revisions.

// Protocol revisions.
const (
	Rev20241105 = "2024-11-05"
	Rev20250326 = "2025-03-26"
	Rev20250618 = "2025-06-18"
	Rev20251125 = "2025-11-25"
	Rev20260728 = "2026-07-28"
)

// Kind is a kind of definition.
type Kind uint8

// The kinds of definition.
const (
	KindTool Kind = iota
	KindPrompt
	KindResource
	KindTemplate
	numKinds
)

// defined are the top-level members of Tool, Prompt, Resource and
// ResourceTemplate in each revision's schema (schema/<rev>/schema.json of
// the specification).
var defined = map[string][numKinds][]string{
	Rev20241105: {
		{"name", "description", "inputSchema"},
		{"name", "description", "arguments"},
		{"uri", "name", "description", "mimeType", "annotations", "size"},
		{"uriTemplate", "name", "description", "mimeType", "annotations"},
	},
	Rev20250326: {
		{"name", "description", "inputSchema", "annotations"},
		{"name", "description", "arguments"},
		{"uri", "name", "description", "mimeType", "annotations", "size"},
		{"uriTemplate", "name", "description", "mimeType", "annotations"},
	},
	Rev20250618: {
		{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta"},
		{"name", "title", "description", "arguments", "_meta"},
		{"uri", "name", "title", "description", "mimeType", "annotations", "size", "_meta"},
		{"uriTemplate", "name", "title", "description", "mimeType", "annotations", "_meta"},
	},
	Rev20251125: {
		{"name", "title", "description", "icons", "inputSchema", "outputSchema", "annotations", "execution", "_meta"},
		{"name", "title", "description", "icons", "arguments", "_meta"},
		{"uri", "name", "title", "description", "icons", "mimeType", "annotations", "size", "_meta"},
		{"uriTemplate", "name", "title", "description", "icons", "mimeType", "annotations", "_meta"},
	},
	Rev20260728: {
		{"name", "title", "description", "icons", "inputSchema", "outputSchema", "annotations", "_meta"},
		{"name", "title", "description", "icons", "arguments", "_meta"},
		{"uri", "name", "title", "description", "icons", "mimeType", "annotations", "size", "_meta"},
		{"uriTemplate", "name", "title", "description", "icons", "mimeType", "annotations", "_meta"},
	},
}

// newerEnvelope are the members of list and read results that only
// 2026-07-28 defines.
var newerEnvelope = []string{"ttlMs", "cacheScope", "resultType"}

// undefined[rev][k] are the members of kind k some revision defines and
// rev does not; with their quoted forms, to skip definitions without them
// cheaply.
var undefined = func() map[string][numKinds]memberSet {
	var all [numKinds][]string
	for _, kinds := range defined {
		for k, ms := range kinds {
			all[k] = append(all[k], ms...)
		}
	}
	out := map[string][numKinds]memberSet{}
	for rev, kinds := range defined {
		var u [numKinds]memberSet
		for k := range kinds {
			for _, m := range all[k] {
				if !slices.Contains(kinds[k], m) && !slices.Contains(u[k].names, m) {
					u[k].names = append(u[k].names, m)
					u[k].quoted = append(u[k].quoted, []byte(`"`+m+`"`))
				}
			}
			sort.Strings(u[k].names)
		}
		out[rev] = u
	}
	return out
}()

type memberSet struct {
	names  []string
	quoted [][]byte
}

// Undefined are the members of definitions of kind k that revision rev
// leaves out (sorted); none for a revision not known here.
func Undefined(k Kind, rev string) []string {
	return slices.Clone(undefined[rev][k].names)
}

// Older reports whether rev is a known revision before 2026-07-28 (whose
// results have no ttlMs, cacheScope or resultType).
func Older(rev string) bool {
	_, known := defined[rev]
	return known && rev < Rev20260728
}

// Project is definition def of kind k as revision rev defines it: def
// without the members rev does not define (see Undefined); def itself
// when it has none of them.
func Project(def json.RawMessage, k Kind, rev string) json.RawMessage {
	u := undefined[rev][k]
	found := false
	for _, q := range u.quoted {
		if bytes.Contains(def, q) {
			found = true
			break
		}
	}
	if !found {
		return def
	}
	out, err := catalog.WithoutMembers(def, func(key string) bool { return slices.Contains(u.names, key) })
	if err != nil { // the view holds valid definitions
		return def
	}
	return out
}

// encodeList encodes a list result: env, the go-sdk result without its
// items, with member key set to the items, item i being defs[i] as rev
// defines it (or, when defs[i] is nil, the go-sdk value value(i)). On an
// older revision the 2026-07-28 members of env are left out.
func encodeList(env any, key string, k Kind, rev string, defs []json.RawMessage, value func(i int) any) ([]byte, error) {
	var items bytes.Buffer
	items.WriteByte('[')
	for i, def := range defs {
		if i > 0 {
			items.WriteByte(',')
		}
		if def == nil {
			b, err := json.Marshal(value(i))
			if err != nil {
				return nil, err
			}
			items.Write(b)
			continue
		}
		items.Write(Project(def, k, rev))
	}
	items.WriteByte(']')
	return encodeObject(env, map[string]json.RawMessage{key: items.Bytes()}, olderDrop(rev))
}

// olderDrop are the envelope members rev does not define.
func olderDrop(rev string) []string {
	if Older(rev) {
		return newerEnvelope
	}
	return nil
}

// encodeObject encodes v, a JSON object, with the members of set set (in
// place of v's own) and without those named in drop.
func encodeObject(v any, set map[string]json.RawMessage, drop []string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for _, d := range drop {
		delete(m, d)
	}
	for k, raw := range set {
		m[k] = raw
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out bytes.Buffer
	out.Grow(len(b) + 64)
	out.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			out.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		out.Write(kb)
		out.WriteByte(':')
		out.Write(m[k])
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// WithoutNewer encodes v, a result, without the 2026-07-28 envelope
// members when rev is older (a resources/read result to a 2025 session).
func WithoutNewer(v any, rev string) ([]byte, error) {
	if !Older(rev) {
		return json.Marshal(v)
	}
	return encodeObject(v, nil, newerEnvelope)
}
