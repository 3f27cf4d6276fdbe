package catalog

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestDiff(t *testing.T) {
	tool := func(name, desc string) json.RawMessage {
		return json.RawMessage(`{"name":"` + name + `","description":"` + desc + `","inputSchema":{"type":"object"}}`)
	}
	base := []Source{{
		Backend:   "a",
		Tools:     []json.RawMessage{tool("keep", "k"), tool("change", "v1"), tool("drop", "x")},
		Prompts:   []json.RawMessage{json.RawMessage(`{"name":"p"}`)},
		Resources: []json.RawMessage{json.RawMessage(`{"uri":"u:1","name":"r"}`)},
	}}
	old := Aggregate(base, nil)
	tests := []struct {
		name    string
		sources []Source
		want    Delta
	}{
		{"identical", base, Delta{}},
		{"unprojected member changed", []Source{{
			Backend:   "a",
			Tools:     []json.RawMessage{json.RawMessage(`{"name":"keep","description":"k","inputSchema":{"type":"object"},"_meta":{"v":2}}`), tool("change", "v1"), tool("drop", "x")},
			Prompts:   base[0].Prompts,
			Resources: base[0].Resources,
		}}, Delta{}},
		{"tools added, removed, changed", []Source{{
			Backend:   "a",
			Tools:     []json.RawMessage{tool("keep", "k"), tool("change", "v2"), tool("new", "n")},
			Prompts:   base[0].Prompts,
			Resources: base[0].Resources,
		}}, Delta{Added: []string{"a_new"}, Removed: []string{"a_drop"}, Changed: []string{"a_change"}}},
		{"prompt and resource changed", []Source{{
			Backend:   "a",
			Tools:     base[0].Tools,
			Prompts:   []json.RawMessage{json.RawMessage(`{"name":"p","description":"now"}`)},
			Resources: []json.RawMessage{json.RawMessage(`{"uri":"u:1","name":"r","mimeType":"text/plain"}`)},
		}}, Delta{PromptsChanged: true, ResourcesChanged: true}},
		{"backend renamed", []Source{{
			Backend:   "b",
			Tools:     base[0].Tools,
			Prompts:   base[0].Prompts,
			Resources: base[0].Resources,
		}}, Delta{
			Added:   []string{"b_change", "b_drop", "b_keep"},
			Removed: []string{"a_change", "a_drop", "a_keep"},
			// the resource keeps its URI but its exposed name changes
			PromptsChanged: true, ResourcesChanged: true,
		}},
		{"everything gone", nil, Delta{
			Removed:        []string{"a_change", "a_drop", "a_keep"},
			PromptsChanged: true, ResourcesChanged: true,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diff(old, Aggregate(tt.sources, nil))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Diff = %+v, want %+v", got, tt.want)
			}
			// Built from the old View, the new one shares its unchanged
			// definitions; the difference must be the same.
			if withPrev := Diff(old, Aggregate(tt.sources, &AggregateOptions{Previous: old})); !reflect.DeepEqual(withPrev, tt.want) {
				t.Errorf("Diff with Previous = %+v, want %+v", withPrev, tt.want)
			}
			if got.Empty() != reflect.DeepEqual(tt.want, Delta{}) {
				t.Errorf("Empty() = %v for %+v", got.Empty(), got)
			}
		})
	}
}

func TestDiffNilViews(t *testing.T) {
	v := Aggregate([]Source{{Backend: "a", Tools: []json.RawMessage{
		json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`)}}}, nil)
	if d := Diff(nil, v); !reflect.DeepEqual(d, Delta{Added: []string{"a_t"}}) {
		t.Errorf("Diff(nil, v) = %+v", d)
	}
	if d := Diff(v, nil); !reflect.DeepEqual(d, Delta{Removed: []string{"a_t"}}) {
		t.Errorf("Diff(v, nil) = %+v", d)
	}
	if d := Diff(nil, nil); !d.Empty() {
		t.Errorf("Diff(nil, nil) = %+v", d)
	}
	var nilView *View
	if _, ok := nilView.Tool("a_t"); ok {
		t.Error("nil view has a tool")
	}
	if _, ok := nilView.Prompt("p"); ok {
		t.Error("nil view has a prompt")
	}
	if _, ok := nilView.Resource("u"); ok {
		t.Error("nil view has a resource")
	}
}

// TestViewConcurrentUse builds Views from one Previous and reads them from
// several goroutines at once; run with -race.
func TestViewConcurrentUse(t *testing.T) {
	sources := benchSources(5, 10)
	prev := Aggregate(sources, nil)
	done := make(chan *View)
	for range 4 {
		go func() {
			v := Aggregate(sources, &AggregateOptions{Previous: prev})
			for _, e := range prev.Tools {
				if _, ok := v.Tool(e.Exposed); !ok {
					t.Errorf("Tool(%q) missing", e.Exposed)
				}
			}
			done <- v
		}()
	}
	for range 4 {
		if d := Diff(prev, <-done); !d.Empty() {
			t.Errorf("Diff = %+v", d)
		}
	}
}
