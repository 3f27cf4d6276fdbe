package stdio

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     Commands
		err      string // in the error; "" for none
	}{
		{"empty", "", Commands{}, ""},
		{"null", "~\n", Commands{}, ""},
		{"contract form", `filesystem: ["npx", "-y", "@modelcontextprotocol/server-filesystem"]`,
			Commands{"filesystem": {Argv: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem"}}}, ""},
		{"mapping form", "demo:\n  argv: [/bin/demo, --stdio]\n  env:\n    HOME: /tmp\n    N: 3\n    TOKEN: {env: FG_TOKEN}\n",
			Commands{"demo": {Argv: []string{"/bin/demo", "--stdio"}, Env: map[string]Value{
				"HOME": {Literal: "/tmp"}, "N": {Literal: "3"}, "TOKEN": {Ref: credential.Ref{Env: "FG_TOKEN"}}}}}, ""},
		{"bad name", `"Bad Name": [x]`, nil, "not an entry name"},
		{"name too long", strings.Repeat("a", 65) + ": [x]", nil, "not an entry name"},
		{"dup", "a: [x]\na: [y]\n", nil, "twice"},
		{"no program", "a: []", nil, "must name a program"},
		{"empty program", `a: [""]`, nil, "must name a program"},
		{"scalar", "a: /bin/sh -c x", nil, "want the argv"},
		{"not mapping", "[a, b]", nil, "want a mapping"},
		{"int arg", "a: [x, 1]", nil, "want a string"},
		{"nested arg", "a: [x, [y]]", nil, "want a string"},
		{"alias", "a: &x [x]\nb: *x\n", nil, "want"},
		{"unknown key", "a: {argv: [x], shell: true}", nil, "unknown key"},
		{"literal ref bad", "a: {argv: [x], env: {T: {env: '1bad'}}}", nil, "invalid credential reference"},
		{"env name", "a: {argv: [x], env: {'1X': y}}", nil, "variable name"},
		{"env null", "a: {argv: [x], env: {X: ~}}", nil, "want a string"},
		{"two docs", "a: [x]\n---\nb: [y]\n", nil, "more than one"},
		{"too many args", "a: [" + strings.Repeat("x,", MaxArgs) + "x]", nil, "limit"},
		{"arg too long", "a: [" + strings.Repeat("x", MaxArg+1) + "]", nil, "at most"},
		{"syntax", "a: [x", nil, "yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Parse error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for k, w := range tc.want {
				g := got[k]
				if !slices.Equal(g.Argv, w.Argv) || len(g.Env) != len(w.Env) {
					t.Fatalf("%s: got %+v, want %+v", k, g, w)
				}
				for n, v := range w.Env {
					if g.Env[n] != v {
						t.Fatalf("%s env %s: got %+v, want %+v", k, n, g.Env[n], v)
					}
				}
			}
		})
	}
}

func TestParseBounds(t *testing.T) {
	var b strings.Builder
	for i := range MaxEntries + 1 {
		b.WriteString("e")
		b.WriteString(strings.Repeat("x", i%10))
		b.WriteString(string(rune('a' + i%26)))
		b.WriteString(strings.Repeat("0", 0))
		b.WriteString("-")
		b.WriteString(itoa(i))
		b.WriteString(": [x]\n")
	}
	if _, err := Parse([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("%d entries: %v", MaxEntries+1, err)
	}
	if _, err := Parse(make([]byte, MaxFile+1)); !errors.Is(err, ErrInvalid) {
		t.Fatalf("over MaxFile: %v", err)
	}
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var d []byte
	for ; i > 0; i /= 10 {
		d = append([]byte{byte('0' + i%10)}, d...)
	}
	return string(d)
}

func TestLoadAndLookup(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cmds.yaml")
	if err := os.WriteFile(p, []byte("demo: [/bin/true]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Lookup("demo"); err != nil {
		t.Fatal(err)
	}
	_, err = c.Lookup("/bin/sh")
	if !errors.Is(err, ErrNotAllowed) || !strings.Contains(err.Error(), `"/bin/sh"`) {
		t.Fatalf("Lookup outside the list: %v", err)
	}
	if c, err := Load(""); err != nil || len(c) != 0 {
		t.Fatalf("Load(\"\") = %v, %v", c, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil || !strings.Contains(err.Error(), "load stdio commands") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestCheckBackendParts(t *testing.T) {
	if err := CheckName("files"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "/bin/sh", "../x", "A", "x y"} {
		if err := CheckName(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckName(%q) = %v", bad, err)
		}
	}
	if err := CheckArgs([]string{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	if err := CheckArgs([]string{"a\x00"}); !errors.Is(err, ErrInvalid) {
		t.Fatal(err)
	}
	if err := CheckEnv(map[string]credential.Ref{"T": {Env: "X"}}); err != nil {
		t.Fatal(err)
	}
	if err := CheckEnv(map[string]credential.Ref{"T": {}}); err == nil {
		t.Fatal("empty ref accepted")
	}
	if err := CheckEnv(map[string]credential.Ref{"1T": {Env: "X"}}); err == nil {
		t.Fatal("bad name accepted")
	}
}
