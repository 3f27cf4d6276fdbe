package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/gowebpki/jcs"
)

// TestEraDigest: the era digest is the SHA-256 of the canonical JSON of
// both eras' digests (computed here by the JCS library), differs when
// either does or they swap, and refuses what is not a catalog digest; a
// view served alike to both eras keeps its own digest.
func TestEraDigest(t *testing.T) {
	a, _ := Digest([]json.RawMessage{json.RawMessage(`{"name":"a","inputSchema":{"type":"object"}}`)})
	b, _ := Digest([]json.RawMessage{json.RawMessage(`{"name":"b","inputSchema":{"type":"object"}}`)})
	got, err := EraDigest(a, b)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(map[string]string{"stateless": b, "session": a})
	canon, err := jcs.Transform(doc)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	if want := "sha256:" + hex.EncodeToString(sum[:]); got != want {
		t.Errorf("EraDigest %s, want %s", got, want)
	}
	if swapped, _ := EraDigest(b, a); swapped == got {
		t.Error("the eras' digests swapped give the same digest")
	}
	for _, bad := range []string{"", "sha256:", "sha256:ABC", "md5:" + a[7:], a + "0", "sha256:" + a[8:] + "g"} {
		if _, err := EraDigest(a, bad); !errors.Is(err, ErrEraDigest) {
			t.Errorf("EraDigest(%q): %v", bad, err)
		}
	}

	v := Aggregate([]Source{{Backend: "x", Tools: []json.RawMessage{json.RawMessage(`{"name":"a","inputSchema":{"type":"object"}}`)}}}, nil)
	w := Aggregate([]Source{{Backend: "x", Tools: []json.RawMessage{json.RawMessage(`{"name":"b","inputSchema":{"type":"object"}}`)}}}, nil)
	if ViewDigest(v, nil) != v.Digest || ViewDigest(v, v) != v.Digest {
		t.Error("a view alike in both eras does not keep its digest")
	}
	if d, _ := EraDigest(v.Digest, w.Digest); ViewDigest(v, w) != d {
		t.Error("a view differing by era is not its era digest")
	}
}
