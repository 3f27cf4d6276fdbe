package catalog

import (
	"encoding/json"
	"fmt"

	"github.com/yosida95/uritemplate/v3"
)

// MaxURITemplate bounds a resource template's uriTemplate: it is compiled
// into a matcher for every read of a URI no resource has.
const MaxURITemplate = 1024

// ValidateResourceTemplate checks that raw is a resource template
// definition: a JSON object of at most MaxDefinitionSize bytes,
// canonicalizable, with a non-empty name and a uriTemplate of at most
// MaxURITemplate bytes that parses as an RFC 6570 template. It returns
// the uriTemplate, or an *InvalidResourceError.
func ValidateResourceTemplate(raw json.RawMessage) (uriTemplate string, err error) {
	r, err := parseEntity(raw, "uriTemplate")
	if err != nil {
		return r.key, &InvalidResourceError{URI: r.key, Reason: err.Error()}
	}
	if len(r.key) > MaxURITemplate {
		return "", &InvalidResourceError{URI: r.key[:64] + "...", Reason: fmt.Sprintf("uriTemplate over %d bytes", MaxURITemplate)}
	}
	if _, err := uritemplate.New(r.key); err != nil {
		return r.key, &InvalidResourceError{URI: r.key, Reason: fmt.Sprintf("uriTemplate: %v", err)}
	}
	if r.name == "" {
		return r.key, &InvalidResourceError{URI: r.key, Reason: "name: missing or empty"}
	}
	return r.key, nil
}

// FilterResourceTemplates is FilterResources for resource templates (one
// per uriTemplate).
func FilterResourceTemplates(raw []json.RawMessage) (valid []json.RawMessage, invalid []InvalidResourceError) {
	return filter(raw, ValidateResourceTemplate, func(err error) InvalidResourceError {
		return *err.(*InvalidResourceError)
	}, func(t string) InvalidResourceError {
		return InvalidResourceError{URI: t, Reason: "duplicate uriTemplate, first definition kept"}
	})
}

// TemplateEntry is a resource template of the view: its uriTemplate, the
// backend owning it, and its definition as the backend gave it.
type TemplateEntry struct {
	URITemplate string          `json:"uri_template"`
	Backend     string          `json:"backend"`
	Def         json.RawMessage `json:"def"`
	match       *uritemplate.Template
}

// Matches reports whether uri is an expansion of the template.
func (t *TemplateEntry) Matches(uri string) bool {
	if t.match == nil {
		m, err := uritemplate.New(t.URITemplate)
		if err != nil {
			return false
		}
		t.match = m
	}
	return t.match.Match(uri) != nil
}

// aggregateTemplates gives the view every backend's templates, in source
// order: of backends offering one uriTemplate, the first keeps it (a read
// of a matching URI goes to it) and the others' is left out, reported as a
// collision.
func aggregateTemplates(srcs []Source) (out []TemplateEntry, collisions []Collision) {
	owner := map[string]string{}
	for _, src := range srcs {
		if src.Reserve {
			continue
		}
		for _, def := range src.ResourceTemplates {
			t, err := ValidateResourceTemplate(def)
			if err != nil {
				continue
			}
			if first, taken := owner[t]; taken {
				collisions = append(collisions, Collision{Kind: KindResource, Name: t, Backend: src.Backend,
					Original: t, KeptBy: first, Resolution: "withheld"})
				continue
			}
			owner[t] = src.Backend
			m, _ := uritemplate.New(t)
			out = append(out, TemplateEntry{URITemplate: t, Backend: src.Backend, Def: def, match: m})
		}
	}
	return out, collisions
}

// Template returns the first resource template of the view (in source
// order) that uri is an expansion of.
func (v *View) Template(uri string) (TemplateEntry, bool) {
	if v == nil {
		return TemplateEntry{}, false
	}
	for i := range v.Templates {
		if v.Templates[i].Matches(uri) {
			return v.Templates[i], true
		}
	}
	return TemplateEntry{}, false
}
