package search

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestSchemaTerms(t *testing.T) {
	tests := []struct {
		name      string
		schema    string
		depth     int
		wantNames []string
		wantDescs []string
	}{
		{
			name:      "flat properties, in document order",
			schema:    `{"type":"object","properties":{"repo":{"type":"string","description":"Repository name"},"owner":{"type":"string","title":"Owner login"}}}`,
			depth:     5,
			wantNames: []string{"repository", "owner"},
			wantDescs: []string{"repository", "nam", "owner", "login"},
		},
		{
			name:      "camelCase names and enum values",
			schema:    `{"properties":{"mergeMethod":{"enum":["squash","rebase",3]}}}`,
			depth:     5,
			wantNames: []string{"merg", "method"},
			wantDescs: []string{"squash", "rebas"},
		},
		{
			name: "nested objects and array items",
			schema: `{"properties":{"edits":{"type":"array","items":{"type":"object","properties":{
				"oldText":{"description":"Text to find"}}}},"opts":{"properties":{"dryRun":{}}}}}`,
			depth:     5,
			wantNames: []string{"edit", "old", "text", "opt", "dry", "run"},
			wantDescs: []string{"text", "find"},
		},
		{
			name:      "depth bound stops descent",
			schema:    `{"properties":{"a1":{"properties":{"b2":{"properties":{"c3":{}}}}}}}`,
			depth:     2,
			wantNames: []string{"1", "2"},
		},
		{
			name:      "anyOf branches and additionalProperties",
			schema:    `{"anyOf":[{"properties":{"email":{}}},{"properties":{"phone":{}}}],"additionalProperties":{"properties":{"extra":{}}}}`,
			depth:     5,
			wantNames: []string{"email", "phon", "extra"},
		},
		{name: "not an object", schema: `[1,2]`, depth: 5},
		{name: "invalid JSON", schema: `{"properties":`, depth: 5},
		{name: "empty", schema: ``, depth: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			names, descs := schemaTerms(json.RawMessage(tt.schema), tt.depth, nil, nil)
			if !slices.Equal(names, tt.wantNames) {
				t.Errorf("names = %q, want %q", names, tt.wantNames)
			}
			if !slices.Equal(descs, tt.wantDescs) {
				t.Errorf("descs = %q, want %q", descs, tt.wantDescs)
			}
		})
	}
}
