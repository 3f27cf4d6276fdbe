package naming

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// scenario is one testdata/resolve/*.json file: a Spec and catalogs.
type scenario struct {
	Spec     *Spec     `json:"spec"`
	Catalogs []Catalog `json:"catalogs"`
}

// outcome is a scenario's golden file: every exposed name by kind and
// "backend own", and the collisions.
type outcome struct {
	Order      []string                   `json:"order"`
	Exposed    map[Kind]map[string]string `json:"exposed"`
	Hidden     map[Kind][]string          `json:"hidden,omitempty"`
	Collisions []Collision                `json:"collisions"`
}

func TestResolveScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/resolve/*.json")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var sc scenario
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&sc); err != nil {
				t.Fatal(err)
			}
			res := Resolve(sc.Spec, sc.Catalogs)
			out := outcome{Order: res.Order, Exposed: map[Kind]map[string]string{}, Hidden: map[Kind][]string{}, Collisions: res.Collisions}
			for _, c := range sc.Catalogs {
				for _, k := range Kinds {
					for _, own := range c.names(k) {
						if e, ok := res.Exposed(k, c.Backend, own); ok {
							if out.Exposed[k] == nil {
								out.Exposed[k] = map[string]string{}
							}
							out.Exposed[k][c.Backend+" "+own] = e
						} else {
							out.Hidden[k] = append(out.Hidden[k], c.Backend+" "+own)
						}
					}
				}
			}
			got, _ := json.MarshalIndent(out, "", "  ")
			golden := strings.TrimSuffix(f, ".json") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("missing golden (run with -update): %v", err)
			}
			if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
				t.Errorf("outcome differs from %s:\n%s", golden, got)
			}
		})
	}
	if n == 0 {
		t.Fatal("no scenarios")
	}
}
