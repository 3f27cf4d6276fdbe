package view

import (
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/policy"
)

// Overlay is s as one caller sees it when some backends show that caller
// other tools than the catalog's (the sign-in tools of user_oauth
// backends): Filter(keep), plus the tools extra (which the catalog does
// not hold; their definitions are the values themselves), in name order.
// Routing (Catalog) is unchanged.
func (s *Served) Overlay(keep func(k policy.Kind, name string) bool, extra []*mcp.Tool) *Served {
	f := s.Filter(keep)
	for _, t := range extra {
		if _, dup := f.Tools[t.Name]; dup {
			continue // a catalog tool of that name wins
		}
		f.Tools[t.Name] = t
		f.ToolList = append(f.ToolList, t)
	}
	slices.SortFunc(f.ToolList, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return f
}

// OwnerOf is the backend that serves the item of kind k named name in s
// ("" for none).
func (s *Served) OwnerOf(k policy.Kind, name string) string {
	switch k {
	case policy.KindTool:
		if e, ok := s.Catalog.Tool(name); ok {
			return e.Backend
		}
	case policy.KindPrompt:
		if e, ok := s.Catalog.Prompt(name); ok {
			return e.Backend
		}
	case policy.KindResource:
		if e, ok := s.Catalog.Resource(name); ok {
			return e.Backend
		}
	}
	return ""
}
