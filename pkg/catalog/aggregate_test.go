package catalog

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// scenario is the input of one aggregation golden test.
type scenario struct {
	Separator string `json:"separator"`
	Sources   []struct {
		Backend   string            `json:"backend"`
		Tools     []json.RawMessage `json:"tools"`
		Resources []json.RawMessage `json:"resources"`
		Prompts   []json.RawMessage `json:"prompts"`
	} `json:"sources"`
}

func loadScenario(t *testing.T, path string) ([]Source, *AggregateOptions) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sc scenario
	if err := json.Unmarshal(data, &sc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sources := make([]Source, len(sc.Sources))
	for i, s := range sc.Sources {
		sources[i] = Source{Backend: s.Backend, Tools: s.Tools, Resources: s.Resources, Prompts: s.Prompts}
	}
	var opts *AggregateOptions
	if sc.Separator != "" {
		opts = &AggregateOptions{Separator: sc.Separator}
	}
	return sources, opts
}

func TestAggregateGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/aggregate/*.json")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden.json") {
			continue
		}
		n++
		t.Run(filepath.Base(in), func(t *testing.T) {
			sources, opts := loadScenario(t, in)
			v := Aggregate(sources, opts)
			checkView(t, v)
			got, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(in, ".json") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("view differs from %s:\n%s", golden, got)
			}
		})
	}
	if n == 0 {
		t.Fatal("no scenarios in testdata/aggregate")
	}
}

// checkView asserts the invariants every View must hold.
func checkView(t *testing.T, v *View) {
	t.Helper()
	defs := make([]json.RawMessage, len(v.Tools))
	for i, e := range v.Tools {
		defs[i] = e.Def
		if i > 0 && v.Tools[i-1].Exposed >= e.Exposed {
			t.Errorf("tools not sorted or not unique at %q", e.Exposed)
		}
		if err := ValidateName(e.Exposed); err != nil {
			t.Errorf("exposed name %q: %v", e.Exposed, err)
		}
		if name, err := ValidateTool(e.Def); err != nil || name != e.Exposed {
			t.Errorf("def of %q: name %q, err %v", e.Exposed, name, err)
		}
		if got, ok := v.Tool(e.Exposed); !ok || got.Backend != e.Backend || got.Original != e.Original {
			t.Errorf("Tool(%q) = %+v, %v", e.Exposed, got, ok)
		}
	}
	if d := mustDigest(t, defs); d != v.Digest {
		t.Errorf("View.Digest = %s, Digest(defs) = %s", v.Digest, d)
	}
	for i, p := range v.Prompts {
		if i > 0 && v.Prompts[i-1].Exposed >= p.Exposed {
			t.Errorf("prompts not sorted or not unique at %q", p.Exposed)
		}
		if name, err := ValidatePrompt(p.Def); err != nil || name != p.Exposed {
			t.Errorf("prompt def of %q: name %q, err %v", p.Exposed, name, err)
		}
		if got, ok := v.Prompt(p.Exposed); !ok || got.Backend != p.Backend {
			t.Errorf("Prompt(%q) = %+v, %v", p.Exposed, got, ok)
		}
	}
	for i, r := range v.Resources {
		if i > 0 && v.Resources[i-1].URI >= r.URI {
			t.Errorf("resources not sorted or not unique at %q", r.URI)
		}
		if uri, err := ValidateResource(r.Def); err != nil || uri != r.URI {
			t.Errorf("resource def of %q: uri %q, err %v", r.URI, uri, err)
		}
		if got, ok := v.Resource(r.URI); !ok || got.Exposed != r.Exposed {
			t.Errorf("Resource(%q) = %+v, %v", r.URI, got, ok)
		}
	}
	if _, ok := v.Tool("no such tool"); ok {
		t.Error("Tool found an unknown name")
	}
}

// TestAggregateCollisionRule spells out the resolution rule on the
// documented example without relying on a golden file.
func TestAggregateCollisionRule(t *testing.T) {
	schema := `{"type":"object"}`
	tool := func(name string) json.RawMessage {
		return json.RawMessage(`{"name":"` + name + `","inputSchema":` + schema + `}`)
	}
	v := Aggregate([]Source{
		{Backend: "a_b", Tools: []json.RawMessage{tool("c")}},
		{Backend: "a", Tools: []json.RawMessage{tool("b_c"), tool("b_c_2")}},
	}, nil)
	want := map[string][2]string{ // exposed -> backend, original
		"a_b_c":   {"a", "b_c"},
		"a_b_c_2": {"a", "b_c_2"},
		"a_b_c_3": {"a_b", "c"},
	}
	if len(v.Tools) != len(want) {
		t.Fatalf("tools = %+v", v.Tools)
	}
	for exposed, w := range want {
		e, ok := v.Tool(exposed)
		if !ok || e.Backend != w[0] || e.Original != w[1] {
			t.Errorf("Tool(%q) = %+v, %v; want %v", exposed, e, ok, w)
		}
	}
	wantCollision := Collision{Kind: KindTool, Name: "a_b_c", Backend: "a_b", Original: "c", KeptBy: "a", Exposed: "a_b_c_3", Resolution: "suffixed"}
	if len(v.Collisions) != 1 || v.Collisions[0] != wantCollision {
		t.Errorf("collisions = %+v, want %+v", v.Collisions, wantCollision)
	}
}

func TestAggregateNilAndEmpty(t *testing.T) {
	for _, v := range []*View{Aggregate(nil, nil), Aggregate([]Source{{Backend: "x"}}, &AggregateOptions{})} {
		checkView(t, v)
		if v.Digest != "sha256:4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945" {
			t.Errorf("empty view digest = %s", v.Digest)
		}
		if d := Diff(nil, v); !d.Empty() {
			t.Errorf("Diff(nil, empty view) = %+v", d)
		}
	}
}

func TestAggregateDefsShareNothingWithInput(t *testing.T) {
	raw := []byte(`{"name":"t","inputSchema":{"type":"object"}}`)
	v := Aggregate([]Source{{Backend: "b", Tools: []json.RawMessage{raw}}}, nil)
	raw[9] = 'X'
	if e, _ := v.Tool("b_t"); !strings.Contains(string(e.Def), `"b_t"`) || strings.Contains(string(e.Def), "X") {
		t.Errorf("view changed with its input: %s", e.Def)
	}
}
