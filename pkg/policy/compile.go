package policy

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	celenv "cel.dev/cel-go/common/env"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
)

// Bounds on CEL. An expression is parsed at most MaxWhenBytes long and
// maxRecursion deep, with comprehensions nested at most twice; one
// evaluation stops with an error (which fails closed) after costLimit
// units of runtime cost (CEL's, with calls charged by the bytes and
// elements they touch, see sizeCost).
const (
	maxRecursion = 32
	maxNesting   = 2
	costLimit    = 10_000
)

// env is the one CEL environment of every policy: built once, it is safe
// for concurrent use.
var env = sync.OnceValues(func() (*cel.Env, error) {
	dyn := cel.MapType(cel.StringType, cel.DynType)
	// The standard library without concatenation of strings and bytes:
	// CEL's runtime cost counts one as a unit whatever its size, so in a
	// comprehension over a large claim it could copy megabytes within the
	// cost limit. Nothing a policy decides needs it. (Lists concatenate
	// lazily, without copying, and the map and filter macros need it.)
	noConcat := celenv.NewLibrarySubset().AddExcludedFunctions(celenv.NewFunction(operators.Add,
		&celenv.Overload{ID: overloads.AddString}, &celenv.Overload{ID: overloads.AddBytes}))
	return cel.NewCustomEnv(
		cel.StdLib(cel.StdLibSubset(noConcat)),
		cel.Variable("claims", dyn),
		cel.Variable("identity", cel.StringType),
		cel.Variable("group", cel.StringType),
		cel.Variable("item", dyn),
		cel.Variable("tool", dyn),
		cel.OptionalTypes(),
		cel.ParserRecursionLimit(maxRecursion),
		cel.ParserExpressionSizeLimit(MaxWhenBytes),
		cel.ASTValidators(cel.ValidateComprehensionNestingLimit(maxNesting),
			cel.ValidateRegexLiterals(), cel.ValidateDurationLiterals(), cel.ValidateTimestampLiterals()),
	)
})

// Policy is a compiled section: safe for concurrent use, immutable. A nil
// *Policy allows everything (no section).
type Policy struct {
	generation uint64
	stamp      uint64 // unique in the process: the visible-set cache's key (see Cache)
	digest     string
	deny       bool // the default
	rules      []*rule
	// denies and allows index rules by effect, in section order.
	denies, allows []*rule
	section        *Section
}

type rule struct {
	index int
	name  string
	deny  bool
	// any: the rule names no kind and applies to every item.
	any   bool
	globs [kindCount][]glob
	prog  cel.Program // nil: no when, always true
	// perItem: the expression reads item or tool, so it is evaluated per
	// item; otherwise once per subject.
	perItem bool
}

// Compile validates and compiles a section. A nil section gives a policy
// that allows everything. Errors are *RuleError naming the rule; a CEL
// compile error is on field "when" and wraps the CEL issues' text.
func Compile(s *Section) (*Policy, error) {
	if s == nil {
		return &Policy{stamp: nextStamp()}, nil
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("compile policy: CEL environment: %w", err)
	}
	p := &Policy{deny: s.Default == Deny, digest: s.Digest(), section: s.Clone(), stamp: nextStamp()}
	for i, r := range s.Rules {
		cr := &rule{index: i, name: r.Name, deny: r.Effect == Deny,
			any: r.Tools == nil && r.Prompts == nil && r.Resources == nil}
		cr.globs[KindTool] = compileGlobs(r.Tools)
		cr.globs[KindPrompt] = compileGlobs(r.Prompts)
		cr.globs[KindResource] = compileGlobs(r.Resources)
		if strings.TrimSpace(r.When) != "" {
			if cr.prog, cr.perItem, err = compileWhen(e, r.When); err != nil {
				return nil, &RuleError{Index: i, Name: r.Name, Field: "when", Msg: clipLines(err.Error()), Err: err}
			}
		}
		p.rules = append(p.rules, cr)
		if cr.deny {
			p.denies = append(p.denies, cr)
		} else {
			p.allows = append(p.allows, cr)
		}
	}
	return p, nil
}

func compileWhen(e *cel.Env, src string) (cel.Program, bool, error) {
	ast, iss := e.Compile(src)
	if iss.Err() != nil {
		return nil, false, iss.Err()
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, false, fmt.Errorf("type is %s, want bool", ast.OutputType())
	}
	perItem := false
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == "item" || ref.Name == "tool" {
			perItem = true
		}
	}
	prog, err := e.Program(ast, cel.CostTracking(sizeCost{}), cel.CostLimit(costLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, false, err
	}
	return prog, perItem, nil
}

// clipLines keeps a CEL error text to one bounded line.
func clipLines(s string) string {
	return clip(strings.Join(strings.Fields(s), " "))
}

// Generation is the event log generation the policy took effect at (0 for
// one that was not set with WithGeneration).
func (p *Policy) Generation() uint64 {
	if p == nil {
		return 0
	}
	return p.generation
}

// WithGeneration returns a copy of the policy stamped with the generation
// it took effect at (a new policy to the visible-set cache).
func (p *Policy) WithGeneration(gen uint64) *Policy {
	if p == nil {
		p = &Policy{}
	}
	c := *p
	c.generation, c.stamp = gen, nextStamp()
	return &c
}

// Digest is the section's digest ("" for no section).
func (p *Policy) Digest() string {
	if p == nil {
		return ""
	}
	return p.digest
}

// Section returns a copy of the compiled section (nil: no section).
func (p *Policy) Section() *Section {
	if p == nil {
		return nil
	}
	return p.section.Clone()
}

// DenyAll returns a policy that refuses everything, for a section that
// cannot be compiled where failing open is not an option (an event log
// written by a newer controller, say).
func DenyAll() *Policy { return &Policy{deny: true, digest: "deny-all", stamp: nextStamp()} }

// glob is one compiled pattern: an exact name, a literal prefix followed
// by a single trailing star, or a general path.Match pattern.
type glob struct {
	pattern string
	kind    uint8
}

const (
	globExact uint8 = iota
	globPrefix
	globMatch
)

func compileGlobs(pats []string) []glob {
	if pats == nil {
		return nil
	}
	out := make([]glob, len(pats))
	for i, p := range pats {
		switch {
		case !hasMeta(p):
			out[i] = glob{p, globExact}
		case strings.HasSuffix(p, "*") && !hasMeta(p[:len(p)-1]):
			out[i] = glob{p[:len(p)-1], globPrefix}
		default:
			out[i] = glob{p, globMatch}
		}
	}
	return out
}

// match is path.Match(g, name) for a pattern already known to be valid.
func (g glob) match(name string) bool {
	switch g.kind {
	case globExact:
		return name == g.pattern
	case globPrefix: // a trailing * matches anything but '/'
		return strings.HasPrefix(name, g.pattern) && !strings.Contains(name[len(g.pattern):], "/")
	}
	ok, _ := path.Match(g.pattern, name)
	return ok
}

// applies reports whether the rule's globs select the item (before CEL).
func (r *rule) applies(k Kind, name string) bool {
	if r.any {
		return true
	}
	for _, g := range r.globs[k] {
		if g.match(name) {
			return true
		}
	}
	return false
}
