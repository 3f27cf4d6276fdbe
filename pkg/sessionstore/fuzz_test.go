package sessionstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzDecodeRecord decodes arbitrary bytes as the stored value of a
// session: it never panics, refuses with ErrInvalid, and a record it
// accepts names the session it is stored under and, when it is one the
// store could have written (encodeRecord takes it), round-trips: its
// encoding decodes to the same record and encodes to the same bytes.
func FuzzDecodeRecord(f *testing.F) {
	golden, err := os.ReadFile(filepath.Join("testdata", "record.golden.json"))
	if err != nil {
		f.Fatal(err)
	}
	const id = "A1B2C3D4E5F6G7H8"
	f.Add(id, golden)
	for _, s := range []string{
		`{"id":"A1B2C3D4E5F6G7H8","group":"g","mode":"optimizer","created_at":"2026-03-01T12:00:00.123456789+05:30","last_seen":"0001-01-01T00:00:00Z","convergence":{}}`,
		`{"id":"A1B2C3D4E5F6G7H8","mode":"passthrough","initialize_params":{"a":"<\u2028>","b":[1.0e2,-0]}}`,
		`{"id":"A1B2C3D4E5F6G7H8","mode":"bogus"}`,
		`{"id":"A1B2C3D4E5F6G7H8","mode":"passthrough","initialize_params":null}`,
		`{"id":"A1B2C3D4E5F6G7H8","ID":"other","mode":"passthrough"}`,
		`{"id":"other-session","mode":"passthrough"}`,
		`{"id":"A1B2C3D4E5F6G7H8","mode":"passthrough","applied_generation":-1}`,
		`{"id":"A1B2C3D4E5F6G7H8","mode":"passthrough","convergence":{"traversal":{"cursors":["a","b"],"final":true}}}`,
		`{"id":"A1B2C3D4E5F6G7H8","mode":"passthrough","initialize_params":` + strings.Repeat("[", 100000),
		`{"id":"A1B2C3D4E5F6G7H8","mode":"passthrough","edge":"\xff\ud800"}`,
		``,
	} {
		f.Add(id, []byte(s))
	}
	f.Fuzz(func(t *testing.T, id string, b []byte) {
		r, err := decodeRecord(id, b)
		if err != nil {
			if r != nil || !errors.Is(err, ErrInvalid) {
				t.Fatalf("refused with %v (record %v)", err, r)
			}
			return
		}
		if r.ID != id {
			t.Fatalf("stored under %q, names %q", id, r.ID)
		}
		enc, err := encodeRecord(r)
		if err != nil {
			return // not a record the store writes (a bad id or mode, too large)
		}
		again, err := decodeRecord(id, enc)
		if err != nil {
			t.Fatalf("encoded %s does not decode: %v", enc, err)
		}
		enc2, err := encodeRecord(again)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encoded\n%s\nthen\n%s (%v)", enc, enc2, err)
		}
		if !r.CreatedAt.Equal(again.CreatedAt) || !r.LastSeen.Equal(again.LastSeen) || r.Mode != again.Mode ||
			r.Owner != again.Owner || r.Group != again.Group || r.AppliedGeneration != again.AppliedGeneration ||
			!reflect.DeepEqual(r.Convergence.Traversal.Cursors, again.Convergence.Traversal.Cursors) {
			t.Fatalf("decoded %+v\nround trip %+v", r, again)
		}
	})
}
