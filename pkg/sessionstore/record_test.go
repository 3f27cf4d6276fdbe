package sessionstore

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/convergence"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// The stored JSON is the cross-edge contract: snake_case keys, the client's
// params unescaped, the convergence evidence embedded.
func TestRecordGolden(t *testing.T) {
	r := newRecord("A1B2C3D4E5F6G7H8", t0)
	r.LastSeen = t0.Add(90 * time.Second)
	r.Convergence.Traversal = convergence.Traversal{StartSeq: 1, StartedAt: t0, CompletedAt: t0, Generation: 7,
		Cursors: []string{""}, Final: true, Pages: 1, Tools: 2, Digest: "sha256:0f1e"}
	b, err := encodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, b, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	path := filepath.Join("testdata", "record.golden.json")
	if *update {
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("encoded record:\n%s\nwant (%s):\n%s", pretty.Bytes(), path, want)
	}
	back, err := decodeRecord(r.ID, b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := encodeRecord(back)
	if err != nil || !bytes.Equal(again, b) {
		t.Errorf("re-encoding the decoded record changed it (err %v):\n%s\n%s", err, again, b)
	}
}

func TestDecodeRefusesForeignRecord(t *testing.T) {
	b, err := encodeRecord(newRecord("AAAAAAAAAAAA", t0))
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		key  string
		body []byte
	}{
		"other id": {"BBBBBBBBBBBB", b},
		"not json": {"AAAAAAAAAAAA", []byte("{")},
	} {
		// Errors name a session by its hash (IDHash), never by its id.
		if _, err := decodeRecord(tc.key, tc.body); err == nil || !strings.Contains(err.Error(), IDHash(tc.key)) || strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: decode err = %v, want an error naming %s by its hash", name, err, tc.key)
		}
	}
}

func TestIDHash(t *testing.T) {
	a, b := IDHash("AAAAAAAAAAAA"), IDHash("AAAAAAAAAAAB")
	if len(a) != 16 || a == b || a != IDHash("AAAAAAAAAAAA") || strings.Contains(a, "AAAA") || IDHash("") != "" {
		t.Errorf("IDHash: %q, %q", a, b)
	}
	// The digits logs and call trail entries already carry: the first 8
	// bytes of SHA-256("fleetgate/session-id\x00" + id), for ids that fit
	// the stack buffer and for longer ones.
	for id, want := range map[string]string{"s-1": "54d7b6349d9b6fd9", strings.Repeat("x", 200): "6d7d93a3cde919e9"} {
		if got := IDHash(id); got != want {
			t.Errorf("IDHash(%.10q) = %q, want %q", id, got, want)
		}
	}
}

func TestOwnerHash(t *testing.T) {
	alice := OwnerHash("alice@example.com")
	for _, tc := range []struct {
		name     string
		identity string
		check    func(string) bool
	}{
		{"empty identity has no owner", "", func(h string) bool { return h == "" }},
		{"stable", "alice@example.com", func(h string) bool { return h == alice }},
		{"distinct", "bob@example.com", func(h string) bool { return h != alice }},
		{"case matters", "Alice@example.com", func(h string) bool { return h != alice }},
		{"format", "x", func(h string) bool { return strings.HasPrefix(h, "sha256:") && len(h) == len("sha256:")+64 }},
		{"identity not stored", "secret-token", func(h string) bool { return !strings.Contains(h, "secret") }},
	} {
		if h := OwnerHash(tc.identity); !tc.check(h) {
			t.Errorf("%s: OwnerHash(%q) = %q", tc.name, tc.identity, h)
		}
	}
}

// A record's tasks are bounded in count and size, on the way in and out.
func TestRecordTasksBounded(t *testing.T) {
	r := newRecord("AAAAAAAAAAAA", t0)
	r.Tasks = []TaskRef{{Backend: "alpha", ID: "t-1"}}
	b, err := encodeRecord(r)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeRecord(r.ID, b)
	if err != nil || len(back.Tasks) != 1 || back.Tasks[0] != r.Tasks[0] {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	many := make([]TaskRef, MaxTasks+1)
	for i := range many {
		many[i] = TaskRef{Backend: "alpha", ID: "t"}
	}
	for name, ts := range map[string][]TaskRef{
		"too many":   many,
		"empty id":   {{Backend: "alpha"}},
		"no backend": {{ID: "t-1"}},
		"long id":    {{Backend: "alpha", ID: strings.Repeat("x", MaxTaskID+1)}},
	} {
		r.Tasks = ts
		if _, err := encodeRecord(r); err == nil {
			t.Errorf("%s: encoded", name)
		}
		stored, _ := json.Marshal(r)
		if _, err := decodeRecord(r.ID, stored); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
