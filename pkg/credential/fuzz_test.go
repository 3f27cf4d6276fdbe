package credential

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// FuzzParseRefJSON: never panics; a refusal matches ErrLiteral or
// ErrInvalidRef and quotes nothing of the input beyond a member name; an
// accepted reference validates, prints as itself, and round-trips through
// JSON.
func FuzzParseRefJSON(f *testing.F) {
	for _, s := range []string{`{"env":"X"}`, `{"file":"/run/secrets/a"}`, `"Bearer zzz"`, `{"env":"X","file":"/y"}`,
		`{"env":null}`, `{"env":"X","env":"Y"}`, `{"file":"/a/./b"}`, `[[[[[]]]]]`, `{"env":"\u0000"}`, ` `, `{"file":"/\u0000"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := ParseRefJSON(data)
		if err != nil {
			if !errors.Is(err, ErrLiteral) && !errors.Is(err, ErrInvalidRef) {
				t.Fatalf("error %v matches neither sentinel", err)
			}
			if len(data) >= 8 && strings.Contains(err.Error(), string(data)) {
				t.Fatalf("error %q quotes the input", err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted %+v does not validate: %v", r, err)
		}
		if s := r.String(); s != "env "+r.Env && s != "file "+r.File {
			t.Fatalf("String %q of %+v", s, r)
		}
		j, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := ParseRefJSON(j); err != nil || again != r {
			t.Fatalf("round trip of %s: %+v, %v", j, again, err)
		}
	})
}

// FuzzCheckName: never panics; an accepted name is canonical, accepted
// again, and a valid header name to net/http.
func FuzzCheckName(f *testing.F) {
	for _, s := range []string{"Authorization", "x-api-key", "Host", "mcp-session-id", "a b", "é", "X_Y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		canon, err := CheckName(name)
		if err != nil {
			if !errors.Is(err, ErrInvalidHeader) {
				t.Fatal(err)
			}
			return
		}
		if again, err := CheckName(canon); err != nil || again != canon {
			t.Fatalf("%q -> %q -> %q, %v", name, canon, again, err)
		}
		if !strings.EqualFold(canon, name) || (Headers{canon: {Env: "X"}}).Validate() != nil {
			t.Fatalf("%q -> %q", name, canon)
		}
	})
}
