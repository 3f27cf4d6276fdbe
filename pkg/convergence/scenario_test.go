package convergence

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite testdata/*.record.golden.json")

// base is the origin of scenario times: a step's "at" is seconds after it.
var base = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testDigest is the digest used by the tests: "sha256:" + hex SHA-256 of the
// JSON array of the tools sorted by name, each re-encoded with sorted keys.
func testDigest(tools []json.RawMessage) (string, error) {
	type named struct {
		name string
		v    any
	}
	all := make([]named, 0, len(tools))
	for i, raw := range tools {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", fmt.Errorf("test digest: tool %d: %w", i, err)
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("test digest: tool %d: not an object", i)
		}
		name, _ := obj["name"].(string)
		all = append(all, named{name, v})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].name < all[j].name })
	vs := make([]any, len(all))
	for i, n := range all {
		vs[i] = n.v
	}
	b, err := json.Marshal(vs)
	if err != nil {
		return "", fmt.Errorf("test digest: %w", err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

type scenario struct {
	Description       string         `yaml:"description"`
	ProtocolVersion   string         `yaml:"protocol_version"`
	ClientListChanged bool           `yaml:"client_list_changed"`
	ServerListChanged bool           `yaml:"server_list_changed"`
	Tools             map[string]any `yaml:"tools"` // anchors only
	Steps             []step         `yaml:"steps"`
	Expect            expectation    `yaml:"expect"`
}

type step struct {
	List       *listStep    `yaml:"list"`
	Signal     *signalStep  `yaml:"signal"`
	SetCurrent *currentStep `yaml:"set_current"`
	Handoff    bool         `yaml:"handoff"` // marshal and unmarshal the record
	Expect     *expectation `yaml:"expect"`
}

type listStep struct {
	At         int    `yaml:"at"`
	Cursor     string `yaml:"cursor"`
	NextCursor string `yaml:"next_cursor"`
	Tools      []any  `yaml:"tools"`
}

type signalStep struct {
	At         int    `yaml:"at"`
	Generation uint64 `yaml:"generation"`
}

type currentStep struct {
	Generation uint64 `yaml:"generation"`
	Tools      []any  `yaml:"tools"`
}

type expectation struct {
	Verdict           Status  `yaml:"verdict"`
	Reason            string  `yaml:"reason"`
	GenerationLag     *uint64 `yaml:"generation_lag"`
	SignalToConverged string  `yaml:"signal_to_converged"` // a duration, or "none"
}

func rawTools(t *testing.T, tools []any) []json.RawMessage {
	t.Helper()
	out := make([]json.RawMessage, len(tools))
	for i, v := range tools {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("tool %d: %v", i, err)
		}
		out[i] = b
	}
	return out
}

func loadScenario(t *testing.T, path string) scenario {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var sc scenario
	if err := dec.Decode(&sc); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if sc.Expect.Verdict == "" || sc.Expect.Reason == "" {
		t.Fatalf("%s: expect needs verdict and reason", path)
	}
	return sc
}

// run plays sc's steps on a fresh record, checking every expectation.
func (sc scenario) run(t *testing.T) Record {
	t.Helper()
	rec := Record{
		ProtocolVersion:   sc.ProtocolVersion,
		ClientListChanged: sc.ClientListChanged,
		ServerListChanged: sc.ServerListChanged,
	}
	for i, st := range sc.Steps {
		kinds := 0
		for _, set := range []bool{st.List != nil, st.Signal != nil, st.SetCurrent != nil, st.Handoff, st.Expect != nil} {
			if set {
				kinds++
			}
		}
		if kinds != 1 {
			t.Fatalf("step %d: want exactly one of list, signal, set_current, handoff, expect; got %d", i, kinds)
		}
		switch {
		case st.List != nil:
			l := st.List
			if err := rec.ListPage(base.Add(time.Duration(l.At)*time.Second), l.Cursor, rawTools(t, l.Tools), l.NextCursor, testDigest); err != nil {
				t.Fatalf("step %d: ListPage: %v", i, err)
			}
		case st.Signal != nil:
			rec.Signal(base.Add(time.Duration(st.Signal.At)*time.Second), st.Signal.Generation)
		case st.SetCurrent != nil:
			d, err := testDigest(rawTools(t, st.SetCurrent.Tools))
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			rec.SetCurrent(d, st.SetCurrent.Generation)
		case st.Handoff:
			b, err := json.Marshal(rec)
			if err != nil {
				t.Fatalf("step %d: marshal: %v", i, err)
			}
			rec = Record{}
			if err := json.Unmarshal(b, &rec); err != nil {
				t.Fatalf("step %d: unmarshal: %v", i, err)
			}
		case st.Expect != nil:
			checkExpectation(t, fmt.Sprintf("step %d", i), rec, *st.Expect)
		}
	}
	checkExpectation(t, "final", rec, sc.Expect)
	return rec
}

func checkExpectation(t *testing.T, where string, rec Record, want expectation) {
	t.Helper()
	got, reason := Explain(rec)
	if got != want.Verdict || !strings.Contains(reason, want.Reason) {
		t.Errorf("%s: Explain = %s, %q; want %s with reason containing %q", where, got, reason, want.Verdict, want.Reason)
	}
	if v := Verdict(rec); v != got {
		t.Errorf("%s: Verdict = %s, Explain = %s", where, v, got)
	}
	if want.GenerationLag != nil {
		if lag := GenerationLag(rec); lag != *want.GenerationLag {
			t.Errorf("%s: GenerationLag = %d, want %d", where, lag, *want.GenerationLag)
		}
	}
	if want.SignalToConverged != "" {
		d, ok := SignalToConverged(rec)
		if want.SignalToConverged == "none" {
			if ok {
				t.Errorf("%s: SignalToConverged = %v, true; want none", where, d)
			}
		} else {
			wd, err := time.ParseDuration(want.SignalToConverged)
			if err != nil {
				t.Fatalf("%s: signal_to_converged: %v", where, err)
			}
			if !ok || d != wd {
				t.Errorf("%s: SignalToConverged = %v, %v; want %v, true", where, d, ok, wd)
			}
		}
	}
}

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 8 {
		t.Fatalf("found %d scenarios, want at least 8", len(files))
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			rec := loadScenario(t, path).run(t)

			// The stored form: golden, and judged the same after a round trip.
			got, err := json.MarshalIndent(rec, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", name+".record.golden.json")
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
				t.Errorf("record differs from %s:\n got: %s\nwant: %s", golden, got, want)
			}
			var back Record
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
			v1, r1 := Explain(rec)
			v2, r2 := Explain(back)
			if v1 != v2 || r1 != r2 {
				t.Errorf("after JSON round trip: %s %q, before: %s %q", v2, r2, v1, r1)
			}
		})
	}
}
