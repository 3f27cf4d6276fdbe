package search

import "strings"

// Intent: a tool's name says first what it does ("create_issue",
// "listFiles", after the backend prefix), and a request most often starts
// with what it wants done ("create a ticket", "show the pods") or asks a
// question (which reads). Both are sorted into the broad families of
// actionFamilies; when the query's family and a tool's are both known,
// the tool's score is multiplied by 1 + Options.IntentWeight if they are
// the same and by 1 − Options.IntentPenalty if not. Near tools of one
// backend ("list_customers" and "create_customer" for "find the customer
// with this email") differ most in this.

// actionFamilies are the broad kinds of request a tool serves, each
// named by its seed terms: reading (getting one thing, listing or
// searching many), creating, changing, removing, sending and running. A
// word is of the family of the seed it is, or else of the first seed
// among its curated synonyms (Options.Synonyms: "add" and "make" are
// creating, "find" and "show" reading, "post" sending, "execute"
// running). Most words are of no family. WordNet's synonyms and
// hypernyms were tried as a further step and left out: its verbs are too
// polysemous ("start" is a synonym of "get", "buy" a kind of it).
var actionFamilies = [...][]string{
	{"get", "list", "search", "read"},
	{"create"},
	{"update"},
	{"delete"},
	{"send"},
	{"run"},
}

// noFamily marks a word or tool of no family.
const noFamily = -1

// questionFamily is the family of a query phrased as a question.
const questionFamily = 0

// familyOf returns the family of the index term t, or noFamily.
func (x *expansion) familyOf(t string) int8 {
	if f := seedFamily(t); f != noFamily {
		return f
	}
	for _, u := range x.synonyms[t] {
		if f := seedFamily(u); f != noFamily {
			return f
		}
	}
	return noFamily
}

// seedTerms maps each seed's index term to its family.
var seedTerms = func() map[string]int8 {
	m := map[string]int8{}
	for f, seeds := range actionFamilies {
		for _, s := range seeds {
			m[Stem(s)] = int8(f)
		}
	}
	return m
}()

func seedFamily(t string) int8 {
	if f, ok := seedTerms[t]; ok {
		return f
	}
	return noFamily
}

// actionOf returns the action term of a tool: the first term of its name
// that is not a term of its group's name ("github_create_issue" →
// "create"), or "" for none.
func actionOf(doc Doc) string {
	var a actions
	return a.of(doc)
}

// actions finds tools' actions, reusing its buffers and each group's
// terms across tools.
type actions struct {
	terms  []string
	groups map[string][]string // group name → its terms
}

func (a *actions) of(doc Doc) string {
	group := groupOf(doc)
	gterms, ok := a.groups[group]
	if !ok {
		gterms = Tokenize(group)
		if a.groups == nil {
			a.groups = map[string][]string{}
		}
		a.groups[group] = gterms
	}
	a.terms = appendTokens(a.terms[:0], doc.Name)
	for _, t := range a.terms {
		if !containsString(gterms, t) {
			return t
		}
	}
	return ""
}

// toolFamilies returns the family of each doc's action, or nil when the
// intent factors are off or no tool has a family.
func toolFamilies(docs []Doc, opts *resolved) []int8 {
	if opts.intent == 0 && opts.intentPenalty == 0 {
		return nil
	}
	fam := make([]int8, len(docs))
	known := map[string]int8{}
	var acts actions
	any := false
	for d, doc := range docs {
		a := acts.of(doc)
		f, ok := known[a]
		if !ok {
			f = noFamily
			if a != "" {
				f = opts.familyOf(a)
			}
			known[strings.Clone(a)] = f
		}
		fam[d] = f
		any = any || f != noFamily
	}
	if !any {
		return nil
	}
	return fam
}

// queryFamily returns the family of a query: questionFamily for a
// question, else that of its first term.
func (x *expansion) queryFamily(tokens []string, question bool) int8 {
	switch {
	case question:
		return questionFamily
	case len(tokens) == 0:
		return noFamily
	}
	return x.familyOf(tokens[0])
}

// intentFactor is what a tool of family tool scores times for a query of
// family query.
func (r *resolved) intentFactor(query, tool int8) float64 {
	switch {
	case query == noFamily || tool == noFamily:
		return 1
	case query == tool:
		return 1 + r.intent
	}
	return 1 - r.intentPenalty
}
