package config

import (
	"errors"
	"reflect"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

func TestPut(t *testing.T) {
	base := func() *Fleet {
		return fleetOf(group("default", be("alpha", "http://h:9101/mcp")), group("other", be("zeta", "http://h:9201/mcp")))
	}
	tests := []struct {
		name      string
		group     string
		b         Backend
		wantField string // "" for success
		want      *Fleet
	}{
		{"add to a group, transport defaulted", "default", Backend{Name: "beta", URL: "http://h:9102/mcp"}, "",
			fleetOf(group("default", be("alpha", "http://h:9101/mcp"), be("beta", "http://h:9102/mcp")), group("other", be("zeta", "http://h:9201/mcp")))},
		{"replace in place", "default", Backend{Name: "alpha", URL: "https://h/mcp", Transport: TransportSSE}, "",
			fleetOf(group("default", Backend{Name: "alpha", URL: "https://h/mcp", Transport: TransportSSE}), group("other", be("zeta", "http://h:9201/mcp")))},
		{"unknown group is created at the end", "new", Backend{Name: "beta", URL: "http://h:9102/mcp"}, "",
			fleetOf(group("default", be("alpha", "http://h:9101/mcp")), group("other", be("zeta", "http://h:9201/mcp")), group("new", be("beta", "http://h:9102/mcp")))},
		{"name taken in another group", "default", Backend{Name: "zeta", URL: "http://h:1/mcp"}, "name", nil},
		{"bad group name", "Default", Backend{Name: "beta", URL: "http://h:1/mcp"}, "group", nil},
		{"bad backend name", "default", Backend{Name: "-beta", URL: "http://h:1/mcp"}, "name", nil},
		{"missing name", "default", Backend{URL: "http://h:1/mcp"}, "name", nil},
		{"bad url", "default", Backend{Name: "beta", URL: "ht!tp://x"}, "url", nil},
		{"relative url", "default", Backend{Name: "beta", URL: "/mcp"}, "url", nil},
		{"missing url", "default", Backend{Name: "beta"}, "url", nil},
		{"bad transport", "default", Backend{Name: "beta", URL: "http://h:1/mcp", Transport: "websocket"}, "transport", nil},
		{"stdio with url", "default", Backend{Name: "beta", URL: "http://h:1/mcp", Transport: "stdio", Command: "files"}, "url", nil},
		{"stdio without command", "default", Backend{Name: "beta", Transport: "stdio"}, "command", nil},
		{"stdio command a path", "default", Backend{Name: "beta", Transport: "stdio", Command: "/bin/sh"}, "command", nil},
		{"stdio literal-free env", "default", Backend{Name: "beta", Transport: "stdio", Command: "files",
			Env: map[string]credential.Ref{"T": {}}}, "env", nil},
		{"command without stdio", "default", Backend{Name: "beta", URL: "http://h:1/mcp", Command: "files"}, "command", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			err := f.Put(tc.group, tc.b)
			if tc.wantField == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(f, tc.want) {
					t.Fatalf("after Put:\n got %+v\nwant %+v", f, tc.want)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidConfig) || fe.Field != tc.wantField {
				t.Fatalf("Put error %v, want a *FieldError on field %q", err, tc.wantField)
			}
			if !reflect.DeepEqual(f, base()) {
				t.Fatalf("a refused Put changed the fleet: %+v", f)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	f := fleetOf(group("default", be("alpha", "http://h:9101/mcp"), be("beta", "http://h:9102/mcp")))
	if err := f.Delete("default", "gamma"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete unknown backend: %v, want ErrNotFound", err)
	}
	if err := f.Delete("nope", "alpha"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete from unknown group: %v, want ErrNotFound", err)
	}
	if err := f.Delete("default", "alpha"); err != nil {
		t.Fatal(err)
	}
	if err := f.Delete("default", "beta"); err != nil {
		t.Fatal(err)
	}
	if g, ok := f.Group("default"); !ok || len(g.Backends) != 0 {
		t.Fatalf("after deleting all: group %+v, %v; want the empty group kept", g, ok)
	}
}

func TestCloneIsDeep(t *testing.T) {
	f := fleetOf(group("default", be("alpha", "http://h:9101/mcp")))
	f.Groups[0].PinnedTools = []string{"alpha_echo"}
	c := f.Clone()
	c.Groups[0].Backends[0].URL = "http://changed/mcp"
	c.Groups[0].PinnedTools[0] = "changed"
	if err := c.Put("default", Backend{Name: "beta", URL: "http://h:9102/mcp"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := f.Backend("default", "alpha"); b.URL != "http://h:9101/mcp" || f.Groups[0].PinnedTools[0] != "alpha_echo" {
		t.Fatalf("changing the clone changed the original: %+v", f)
	}
	if _, ok := f.Backend("default", "beta"); ok {
		t.Fatal("Put on the clone added to the original")
	}
	if (*Fleet)(nil).Clone() != nil {
		t.Fatal("Clone of nil is not nil")
	}
}

func TestLookups(t *testing.T) {
	f := fleetOf(group("default", be("alpha", "http://h:9101/mcp")))
	if b, ok := f.Backend("default", "alpha"); !ok || b.Name != "alpha" {
		t.Fatalf("Backend(default, alpha) = %+v, %v", b, ok)
	}
	for _, q := range [][2]string{{"default", "beta"}, {"other", "alpha"}} {
		if _, ok := f.Backend(q[0], q[1]); ok {
			t.Fatalf("Backend(%s, %s) found", q[0], q[1])
		}
	}
	if _, ok := f.Group("other"); ok {
		t.Fatal("Group(other) found")
	}
}

func TestFieldErrorFormat(t *testing.T) {
	tests := []struct {
		e    FieldError
		want string
	}{
		{FieldError{File: "c.yaml", Line: 7, Field: "groups[0].name", Msg: "bad"}, "c.yaml:7: groups[0].name: bad"},
		{FieldError{File: "c.yaml", Line: 3, Msg: "yaml syntax: x"}, "c.yaml:3: yaml syntax: x"},
		{FieldError{File: "c.yaml", Msg: "empty"}, "c.yaml: empty"},
		{FieldError{Field: "url", Msg: "is required"}, "url: is required"},
		{FieldError{Line: 2, Field: "f", Msg: "m"}, "line 2: f: m"},
	}
	for _, tc := range tests {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// TestParseStdio: a stdio backend as the contract writes it.
func TestParseStdio(t *testing.T) {
	f, err := Parse("c.yaml", []byte(`groups:
  - name: default
    backends:
      - name: files
        transport: stdio
        command: filesystem
        args: ["/srv/shared"]
        env:
          GITHUB_TOKEN: {env: FG_GITHUB_TOKEN}
`))
	if err != nil {
		t.Fatal(err)
	}
	b := f.Groups[0].Backends[0]
	if b.Transport != TransportStdio || b.Command != "filesystem" || !reflect.DeepEqual(b.Args, []string{"/srv/shared"}) ||
		b.Env["GITHUB_TOKEN"] != (credential.Ref{Env: "FG_GITHUB_TOKEN"}) || b.URL != "" {
		t.Fatalf("backend %+v", b)
	}
	c := f.Clone()
	c.Groups[0].Backends[0].Args[0] = "/etc"
	if b.Args[0] != "/srv/shared" || !b.Equal(f.Groups[0].Backends[0]) || b.Equal(c.Groups[0].Backends[0]) {
		t.Fatal("Clone shares args, or Equal ignores them")
	}
}
