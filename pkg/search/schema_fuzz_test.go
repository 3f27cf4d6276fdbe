package search

import (
	"encoding/json"
	"slices"
	"sort"
	"testing"
)

// refSchemaTerms is the decoding reference scanSchema is checked against:
// the schema decoded with encoding/json and walked as a tree.
func refSchemaTerms(raw []byte, maxDepth int) (names, descs []string) {
	var root any
	if len(raw) == 0 || len(raw) > MaxSchemaBytes || json.Unmarshal(raw, &root) != nil {
		return nil, nil
	}
	var walk func(s any, depth int)
	walk = func(s any, depth int) {
		m, ok := s.(map[string]any)
		if !ok || depth > maxDepth {
			return
		}
		if props, ok := m["properties"].(map[string]any); ok {
			for name, v := range props {
				names = appendTokens(names, name)
				if p, ok := v.(map[string]any); ok {
					if d, ok := p["description"].(string); ok {
						descs = appendTokens(descs, d)
					}
					if d, ok := p["title"].(string); ok {
						descs = appendTokens(descs, d)
					}
					if enum, ok := p["enum"].([]any); ok {
						for _, e := range enum {
							if d, ok := e.(string); ok {
								descs = appendTokens(descs, d)
							}
						}
					}
				}
				walk(v, depth+1)
			}
		}
		var subs []any
		switch items := m["items"].(type) {
		case map[string]any:
			subs = append(subs, items)
		case []any:
			subs = append(subs, items...)
		}
		if ap, ok := m["additionalProperties"].(map[string]any); ok {
			subs = append(subs, ap)
		}
		for _, key := range [...]string{"anyOf", "oneOf", "allOf"} {
			if branches, ok := m[key].([]any); ok {
				subs = append(subs, branches...)
			}
		}
		for _, sub := range subs {
			walk(sub, depth+1)
		}
	}
	walk(root, 1)
	return names, descs
}

// FuzzScanSchema: on any input the scanner ends without panicking, and on
// a schema without duplicate keys (one that encoding/json gives back
// unchanged) it finds the terms the decoding reference finds, as a
// multiset (the scanner keeps document order, the reference map order).
func FuzzScanSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"repo":{"type":"string","description":"Repository \"name\"\u00e9"},"owner":{"title":"Owner login"}}}`,
		`{"properties":{"mergeMethod":{"enum":["squash","rebase",3,null,{"a":[1]}]}}}`,
		`{"properties":{"edits":{"type":"array","items":{"type":"object","properties":{"oldText":{"description":"Text to find"}}}}}}`,
		`{"anyOf":[{"properties":{"email":{}}},{"properties":{"phone":{}}}],"additionalProperties":{"properties":{"extra":{}}},"items":[{"properties":{"x1":{}}},2]}`,
		`{"properties":{"a1":{"properties":{"b2":{"properties":{"c3":{"description":"deep"}}}}}}}`,
		` { "properties" : { "k" : { "description" : 5 , "title" : [ "t" ] } } } `,
		`[1,2]`, `{"properties":`, `"s"`, `{"properties":{"p":{"description":"\ud83d\ude00 \\ \/"}}}`,
	} {
		f.Add([]byte(s), 5)
	}
	f.Fuzz(func(t *testing.T, raw []byte, depth int) {
		depth = 1 + int(uint(depth)%6)
		names, descs := schemaTerms(raw, depth, nil, nil)
		var v any
		if json.Unmarshal(raw, &v) != nil {
			if len(names)+len(descs) != 0 {
				t.Fatalf("invalid JSON gave terms %q %q", names, descs)
			}
			return
		}
		canon, err := json.Marshal(v)
		if err != nil {
			return
		}
		names, descs = schemaTerms(canon, depth, nil, nil)
		wantNames, wantDescs := refSchemaTerms(canon, depth)
		sort.Strings(names)
		sort.Strings(descs)
		sort.Strings(wantNames)
		sort.Strings(wantDescs)
		if !slices.Equal(names, wantNames) || !slices.Equal(descs, wantDescs) {
			t.Fatalf("%s depth %d:\nnames %q\nwant  %q\ndescs %q\nwant  %q", canon, depth, names, wantNames, descs, wantDescs)
		}
	})
}
