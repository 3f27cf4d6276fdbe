package naming

import (
	"path"
	"strings"
	"testing"
)

// FuzzRules checks the glob and rule checks on arbitrary patterns and
// names: no panic, a pattern Check accepts is one path.Match accepts and
// Allows agrees with it, and Resolve gives unique names within bounds.
func FuzzRules(f *testing.F) {
	f.Add("read_*", "delete_*", "read_file", "search", "find_docs")
	f.Add("[a-", "\\", "x", "x", "y")
	f.Add("file:///docs/*", "*secret*", "file:///docs/a", "file:///b", "docs://b")
	f.Add("*", "", "", "a", "a")
	f.Add(strings.Repeat("*", 300), "[]a]", "é", "\xff", "_")
	f.Fuzz(func(t *testing.T, inc, exc, name, own, to string) {
		r := Rules{Include: []string{inc}, Exclude: []string{exc}, Rename: map[string]string{own: to}}
		for _, k := range Kinds {
			_ = r.Check(k)
		}
		if err := CheckPattern(inc); err == nil {
			if len(inc) > MaxPatternLen {
				t.Fatalf("pattern of %d bytes accepted", len(inc))
			}
			if _, err := path.Match(inc, name); err != nil {
				t.Fatalf("CheckPattern accepted %q, path.Match(%q) fails: %v", inc, name, err)
			}
		}
		okInc, errInc := path.Match(inc, name)
		okExc, errExc := path.Match(exc, name)
		want := errInc == nil && okInc && !(errExc == nil && okExc)
		if got := (Rules{Include: []string{inc}, Exclude: []string{exc}}).Allows(name); got != want {
			t.Fatalf("Allows(%q) = %v, want %v", name, got, want)
		}
		for _, strat := range []Strategy{Prefix, Priority, Manual} {
			spec := &Spec{Conflicts: strat, Backends: []BackendRules{{Name: "a", Tools: r}, {Name: "b"}}}
			res := Resolve(spec, []Catalog{{Backend: "a", Tools: []string{name, own}}, {Backend: "b", Tools: []string{name, to, own}}})
			seen := map[string]bool{}
			for _, b := range []string{"a", "b"} {
				owns := map[string]bool{name: true, own: true}
				if b == "b" {
					owns[to] = true
				}
				for n := range owns {
					e, ok := res.Exposed(Tool, b, n)
					if !ok {
						continue
					}
					if seen[e] {
						t.Fatalf("%s: exposed name %q given twice", strat, e)
					}
					seen[e] = true
				}
			}
		}
	})
}
