package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/proto/eventspb"
)

var update = flag.Bool("update", false, "rewrite golden files")

// scenarioEvent is one event of a fold scenario file.
type scenarioEvent struct {
	Gen     uint64 `json:"gen"`
	Group   string `json:"group"`
	Backend string `json:"backend"`
	Added   *struct {
		URL       string `json:"url"`
		Transport string `json:"transport"`
	} `json:"added,omitempty"`
	Removed bool `json:"removed,omitempty"`
	Health  *struct {
		From, To     string
		Advertisable bool
		Reason       string
	} `json:"health,omitempty"`
	Catalog *struct {
		Tools   []json.RawMessage `json:"tools"`
		Digest  string            `json:"digest"`
		Invalid []InvalidTool     `json:"invalid"`
	} `json:"catalog,omitempty"`
	// WantError is a substring of the error Apply must return.
	WantError string `json:"want_error,omitempty"`
}

func (se scenarioEvent) event(t *testing.T) *eventspb.Event {
	t.Helper()
	at := time.Date(2026, 1, 1, 0, 0, int(se.Gen), 0, time.UTC)
	var ev *eventspb.Event
	switch {
	case se.Added != nil:
		ev = NewBackendAdded(at, se.Group, se.Backend, BackendConfig{URL: se.Added.URL, Transport: se.Added.Transport})
	case se.Removed:
		ev = NewBackendRemoved(at, se.Group, se.Backend, BackendConfig{})
	case se.Health != nil:
		ev = NewHealthChanged(at, se.Group, se.Backend, se.Health.From, se.Health.To, se.Health.Advertisable, se.Health.Reason)
	case se.Catalog != nil:
		var err error
		ev, err = NewCatalogChanged(at, se.Group, se.Backend, &Catalog{Tools: se.Catalog.Tools, Digest: se.Catalog.Digest, InvalidTools: se.Catalog.Invalid})
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("scenario event %d has no kind", se.Gen)
	}
	ev.Generation = se.Gen
	// Round-trip through the wire encoding, as a reader would see it.
	data, err := Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(se.Gen, data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFoldScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/fold/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, ".golden.json") {
			continue
		}
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var evs []scenarioEvent
			if err := json.Unmarshal(raw, &evs); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			s := NewState()
			for _, se := range evs {
				before := s
				beforeJSON, _ := json.Marshal(before)
				next, err := Apply(s, se.event(t))
				switch {
				case se.WantError != "" && (err == nil || !strings.Contains(err.Error(), se.WantError)):
					t.Fatalf("gen %d: error %v, want one containing %q", se.Gen, err, se.WantError)
				case se.WantError != "" && !errors.Is(err, ErrInvalidEvent):
					t.Fatalf("gen %d: error %v does not match ErrInvalidEvent", se.Gen, err)
				case se.WantError == "" && err != nil:
					t.Fatalf("gen %d: %v", se.Gen, err)
				}
				// Apply is pure: the input state is never modified.
				if afterJSON, _ := json.Marshal(before); !bytes.Equal(beforeJSON, afterJSON) {
					t.Fatalf("gen %d: Apply modified its input state", se.Gen)
				}
				if next.Generation < before.Generation {
					t.Fatalf("gen %d: generation went back from %d to %d", se.Gen, before.Generation, next.Generation)
				}
				s = next
			}
			got, err := json.MarshalIndent(s, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(f, ".json") + ".golden.json"
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("missing golden file (run with -update): %v", err)
			}
			if !bytes.Equal(bytes.TrimSpace(got), bytes.TrimSpace(want)) {
				t.Errorf("state differs from %s:\n%s", golden, got)
			}
		})
	}
}

func TestDecodeRejectsBadEvents(t *testing.T) {
	good := NewBackendAdded(time.Unix(1, 0), "g", "b", BackendConfig{URL: "http://x"})
	good.Generation = 5
	data, _ := Encode(good)
	cases := map[string]struct {
		gen  uint64
		data []byte
	}{
		"garbage":          {5, []byte{0xff, 0xff, 0xff}},
		"wrong generation": {6, data},
		"empty":            {5, nil},
	}
	for name, c := range cases {
		if _, err := Decode(c.gen, c.data); !errors.Is(err, ErrDecode) {
			t.Errorf("%s: err = %v, want ErrDecode", name, err)
		}
	}
	if _, err := Decode(5, data); err != nil {
		t.Fatalf("good event: %v", err)
	}
}

func TestLargeCatalogIsCompressed(t *testing.T) {
	var tools []json.RawMessage
	for i := range 2500 {
		tools = append(tools, json.RawMessage(`{"name":"tool_`+strings.Repeat("x", i%7)+`_`+strconv.Itoa(i)+`","description":"Does a thing with a fairly long description that repeats.","inputSchema":{"type":"object","properties":{"id":{"type":"string"}}}}`))
	}
	ev, err := NewCatalogChanged(time.Unix(1, 0), "g", "b", &Catalog{Tools: tools, Digest: "sha256:x"})
	if err != nil {
		t.Fatal(err)
	}
	ev.Generation = 1
	data, _ := Encode(ev)
	if len(data) > 1<<20 {
		t.Fatalf("encoded catalog of 2500 tools is %d bytes, over the 1 MiB NATS default", len(data))
	}
	s, err := Apply(NewState().withBackend(0, "g", "b", &Backend{Name: "b", Group: "g"}), mustDecode(t, 1, data))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Backend("g", "b").Catalog.Tools); got != 2500 {
		t.Fatalf("decoded %d tools, want 2500", got)
	}
}

func mustDecode(t *testing.T, gen uint64, data []byte) *eventspb.Event {
	t.Helper()
	ev, err := Decode(gen, data)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// TestCatalogProtocolVersion: the stateless revision a backend was
// discovered in, and whether it speaks only that generation, survive the
// log: encoded, decoded and folded.
func TestCatalogProtocolVersion(t *testing.T) {
	for _, tc := range []struct {
		pv   string
		only bool
	}{{"", false}, {"2026-07-28", false}, {"2026-07-28", true}} {
		pv := tc.pv
		ev, err := NewCatalogChanged(time.Unix(1, 0), "g", "b", &Catalog{Digest: "sha256:x", ProtocolVersion: pv, StatelessOnly: tc.only})
		if err != nil {
			t.Fatal(err)
		}
		ev.Generation = 1
		data, _ := Encode(ev)
		s, err := Apply(NewState().withBackend(0, "g", "b", &Backend{Name: "b", Group: "g"}), mustDecode(t, 1, data))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Backend("g", "b").Catalog; got.ProtocolVersion != pv || got.StatelessOnly != tc.only {
			t.Errorf("protocol version %q stateless-only %v after the log, want %q %v", got.ProtocolVersion, got.StatelessOnly, pv, tc.only)
		}
	}
}
