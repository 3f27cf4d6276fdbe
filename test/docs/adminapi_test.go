// Package docs checks that the documentation says what the code does:
// every HTTP route in docs/admin-api.md, every command of the guide's code
// blocks that can run offline.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// root is the repository's root, from test/docs.
const root = "../.."

// routes are the literal patterns given to Handle and HandleFunc (of an
// http.ServeMux) in the non-test Go files under dirs, "METHOD /path" or
// "/path", each with the file that serves it. A pattern that is not a
// literal ("GET "+mdPath) is listed in dynamic.
func routes(t *testing.T, dirs ...string) (lit map[string]string, dynamic []string) {
	t.Helper()
	lit = map[string]string{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) != 2 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") {
					return true
				}
				rel, _ := filepath.Rel(root, path)
				if b, ok := call.Args[0].(*ast.BasicLit); ok && b.Kind == token.STRING {
					p, err := strconv.Unquote(b.Value)
					if err == nil {
						lit[p] = rel
					}
					return true
				}
				dynamic = append(dynamic, rel+": "+fset.Position(call.Pos()).String())
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return lit, dynamic
}

// documented are the "### ROUTE" headings of each "## Section" of
// docs/admin-api.md.
func documented(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "docs", "admin-api.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			section = strings.TrimPrefix(line, "## ")
		case strings.HasPrefix(line, "### "):
			route := strings.TrimPrefix(line, "### ")
			route, _, _ = strings.Cut(route, "?") // the query is documentation
			out[section] = append(out[section], route)
		}
	}
	return out
}

var methodRe = regexp.MustCompile(`^(GET|HEAD|POST|PUT|PATCH|DELETE) `)

// Every route the controller and the edge serve is in docs/admin-api.md
// under its binary, and every route there is served.
func TestAdminAPIDocumentsEveryRoute(t *testing.T) {
	doc := documented(t)
	for _, c := range []struct {
		sections []string
		dirs     []string
		dynamic  int // non-literal patterns, documented in prose
	}{
		{[]string{"Controller"}, []string{"pkg/controller", "pkg/dashboard", "cmd/controller"}, 0},
		// The edge's admin API and its MCP listener (the protected
		// resource metadata's path is --resource-url's: prose).
		{[]string{"Edge", "Edge MCP listener"}, []string{"pkg/edge", "cmd/edge"}, 1},
	} {
		served, dynamic := routes(t, c.dirs...)
		var listed []string
		for _, s := range c.sections {
			if len(doc[s]) == 0 {
				t.Fatalf("docs/admin-api.md has no routes under ## %s", s)
			}
			listed = append(listed, doc[s]...)
		}
		for p, file := range served {
			if p == "/" { // the dashboard hands every other path to the admin API
				continue
			}
			if !slices.Contains(listed, p) {
				t.Errorf("%s serves %q: not in docs/admin-api.md under %v", file, p, c.sections)
			}
		}
		for _, p := range listed {
			if _, ok := served[p]; !ok {
				t.Errorf("docs/admin-api.md lists %q under %v: %v do not serve it", p, c.sections, c.dirs)
			}
			if !methodRe.MatchString(p) && p != "/mcp" {
				t.Errorf("docs/admin-api.md: %q names no method", p)
			}
		}
		if len(dynamic) != c.dynamic {
			t.Errorf("%v: %d patterns that are not literals, want %d (document them, then count them here): %v",
				c.dirs, len(dynamic), c.dynamic, dynamic)
		}
	}
}
