package dashboard

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"
)

// FuzzSummarize: a stored session record is hostile input. Summarize
// never panics, refuses what does not name its key, and what it returns
// has bounded, valid strings and encodes as JSON.
func FuzzSummarize(f *testing.F) {
	rec, _ := json.Marshal(record("SESSIONAAAAAAAAAAAAAAAA1", "edge-a", 3, converged(3)))
	f.Add("SESSIONAAAAAAAAAAAAAAAA1", rec)
	f.Add("SESSIONAAAAAAAAAAAAAAAA1", []byte(`{"id":"SESSIONAAAAAAAAAAAAAAAA1","initialize_params":{"clientInfo":{"name":"<script>","version":1}}}`))
	f.Add("SESSIONAAAAAAAAAAAAAAAA1", []byte(`{"id":"other"}`))
	f.Add("../x", []byte(`{}`))
	f.Add("SESSIONAAAAAAAAAAAAAAAA1", []byte(`{"id":"SESSIONAAAAAAAAAAAAAAAA1","created_at":"9999-12-31T23:59:59+14:00","edge":"\u202e\ud800"}`))
	f.Fuzz(func(t *testing.T, key string, value []byte) {
		s, err := Summarize(key, value)
		if err != nil {
			if !errors.Is(err, ErrRecord) {
				t.Fatalf("error without ErrRecord: %v", err)
			}
			return
		}
		if s.ID != key {
			t.Fatalf("summary of %q names %q", key, s.ID)
		}
		for _, v := range []string{s.Edge, s.Group, s.Mode, s.ProtocolVersion, s.Client, s.Digest, s.VerdictReason} {
			if utf8.RuneCountInString(v) > maxSummary {
				t.Fatalf("unbounded field: %d runes", utf8.RuneCountInString(v))
			}
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatalf("summary does not encode: %v", err)
		}
	})
}
