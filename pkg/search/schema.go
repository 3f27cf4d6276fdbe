package search

import (
	"encoding/json"
	"sort"
)

// schemaTerms appends the terms of the parameter names and parameter
// descriptions found in an input schema to names and descs. It reads
// "properties" recursively, descending through nested objects, array
// "items" (a schema or a list of schemas), "additionalProperties" and
// "anyOf"/"oneOf"/"allOf" branches, at most maxDepth levels deep. For each
// property it takes the property name, and its "description", "title" and
// string "enum" values as description text. A schema that is not valid JSON
// or not an object contributes nothing; $ref is not resolved.
func schemaTerms(raw json.RawMessage, maxDepth int, names, descs []string) ([]string, []string) {
	if len(raw) == 0 {
		return names, descs
	}
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return names, descs
	}
	w := schemaWalker{maxDepth: maxDepth, names: names, descs: descs}
	w.walk(root, 1)
	return w.names, w.descs
}

type schemaWalker struct {
	maxDepth     int
	names, descs []string
}

// walk visits schema s whose properties sit at the given depth.
func (w *schemaWalker) walk(s any, depth int) {
	m, ok := s.(map[string]any)
	if !ok || depth > w.maxDepth {
		return
	}
	if props, ok := m["properties"].(map[string]any); ok {
		// Sorted so the walk, and so the emitted term order, is
		// deterministic; scores do not depend on it but debugging does.
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, name := range keys {
			w.names = appendTokens(w.names, name)
			p, _ := props[name].(map[string]any)
			w.describe(p)
			w.walk(p, depth+1)
		}
	}
	switch items := m["items"].(type) {
	case map[string]any:
		w.walk(items, depth+1)
	case []any:
		for _, it := range items {
			w.walk(it, depth+1)
		}
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		w.walk(ap, depth+1)
	}
	for _, key := range [...]string{"anyOf", "oneOf", "allOf"} {
		if branches, ok := m[key].([]any); ok {
			for _, br := range branches {
				w.walk(br, depth+1)
			}
		}
	}
}

// describe appends the descriptive text of one property schema.
func (w *schemaWalker) describe(p map[string]any) {
	if p == nil {
		return
	}
	if d, ok := p["description"].(string); ok {
		w.descs = appendTokens(w.descs, d)
	}
	if t, ok := p["title"].(string); ok {
		w.descs = appendTokens(w.descs, t)
	}
	if enum, ok := p["enum"].([]any); ok {
		for _, v := range enum {
			if s, ok := v.(string); ok {
				w.descs = appendTokens(w.descs, s)
			}
		}
	}
}
