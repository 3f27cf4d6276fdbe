package controller

import (
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/config"
)

func parseFleet(t *testing.T, backends ...string) *config.Fleet {
	t.Helper()
	var sb strings.Builder
	sb.WriteString("groups:\n  - name: default\n    backends:\n")
	for _, b := range backends {
		name, url, _ := strings.Cut(b, "=")
		sb.WriteString("      - name: " + name + "\n        url: " + url + "\n")
	}
	f, err := config.Parse("fleet.yaml", []byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func names(f *config.Fleet) string {
	var out []string
	for _, g := range f.Groups {
		for _, b := range g.Backends {
			out = append(out, g.Name+"/"+b.Name+"="+b.URL)
		}
	}
	return strings.Join(out, " ")
}

func put(group, name, url string) adminChange {
	return adminChange{ref: config.BackendRef{Group: group, Name: name}, what: "PUT " + group + "/" + name,
		apply: func(f *config.Fleet) error { return f.Put(group, config.Backend{Name: name, URL: url}) }}
}

func del(group, name string) adminChange {
	return adminChange{ref: config.BackendRef{Group: group, Name: name}, what: "DELETE " + group + "/" + name,
		apply: func(f *config.Fleet) error { return f.Delete(group, name) }}
}

// A reload applies what changed in the file; the admin changes stay but
// for those the file changed too, which are dropped and named.
func TestRebase(t *testing.T) {
	old := parseFleet(t, "alpha=http://a/mcp", "beta=http://b/mcp", "gamma=http://c/mcp")
	var changes []adminChange
	changes = remember(changes, put("default", "delta", "http://d/mcp"))  // added at runtime
	changes = remember(changes, del("default", "beta"))                   // removed at runtime
	changes = remember(changes, put("default", "gamma", "http://c2/mcp")) // changed at runtime
	changes = remember(changes, put("default", "omega", "http://o/mcp"))
	changes = remember(changes, del("default", "omega")) // put then deleted: one change, the delete
	if len(changes) != 4 {
		t.Fatalf("%d changes remembered, want 4", len(changes))
	}

	// The file adds epsilon and changes gamma's URL: the admin's gamma
	// goes, the rest stays.
	next := parseFleet(t, "alpha=http://a/mcp", "beta=http://b/mcp", "gamma=http://c3/mcp", "epsilon=http://e/mcp")
	r := rebase(old, next, changes)
	if got, want := names(r.fleet), "default/alpha=http://a/mcp default/gamma=http://c3/mcp default/epsilon=http://e/mcp default/delta=http://d/mcp"; got != want {
		t.Fatalf("fleet after reload:\n %s\nwant\n %s", got, want)
	}
	if len(r.dropped) != 1 || r.dropped[0].what != "PUT default/gamma" {
		t.Fatalf("dropped %+v, want the PUT of gamma", r.dropped)
	}
	var kept []string
	for _, a := range r.kept {
		kept = append(kept, a.what)
	}
	if strings.Join(kept, ",") != "PUT default/delta,DELETE default/beta" {
		t.Fatalf("kept %v", kept)
	}

	// An unchanged file gives the running fleet back.
	r2 := rebase(next, next, r.kept)
	if names(r2.fleet) != names(r.fleet) || len(r2.dropped) != 0 {
		t.Fatalf("reloading an unchanged file: %s, dropped %+v", names(r2.fleet), r2.dropped)
	}

	// The log lines: what the reload did to the running fleet.
	running := parseFleet(t, "alpha=http://a/mcp", "gamma=http://c2/mcp", "delta=http://d/mcp")
	var lines []string
	for _, m := range membershipChanges(running, r.fleet) {
		lines = append(lines, m.verb+" "+refString(m.ref))
	}
	if got, want := strings.Join(lines, ", "), "adds default/epsilon, changes default/gamma"; got != want {
		t.Fatalf("reload log: %s, want %s", got, want)
	}
}
