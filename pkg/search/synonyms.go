package search

// DefaultSynonyms are the equivalence groups used for query expansion when
// Options.Synonyms is nil. Agents describe what they want in everyday words
// ("find", "folder", "meeting") while tool vendors use API words ("search",
// "directory", "event"); a purely lexical index misses those pairs. The
// groups are deliberately generic: verbs of create/read/update/delete/list
// style APIs, and a few nouns that name the same thing across SaaS, ops and
// developer tools. They are not tuned to any one catalog.
var DefaultSynonyms = [][]string{
	{"search", "find", "look"},
	{"get", "fetch", "retrieve", "download"},
	{"list", "show", "display", "enumerate"},
	{"create", "add", "new", "make"},
	{"update", "edit", "modify", "change"},
	{"delete", "remove", "erase", "destroy", "trash"},
	{"send", "post"},
	{"upload", "put", "store"},
	{"save", "write", "store"},
	{"run", "execute", "launch"},
	{"fix", "resolve", "solve"},
	{"mute", "silence", "snooze"},
	{"folder", "directory"},
	{"repo", "repository"},
	{"meeting", "event", "appointment"},
	{"alert", "alarm", "monitor"},
	{"error", "exception"},
	{"outage", "incident"},
	{"bill", "invoice"},
	{"phone", "call", "dial"},
	{"sms", "text"},
	{"email", "mail"},
	{"link", "url"},
}

// questionWords mark a query phrased as a question ("which pods are
// crashing", "what meetings do I have", "when did it change"). A question
// asks to read state, so expansion adds questionTerms for it. They are
// matched on the raw, lower-cased words, before stop-word removal drops
// them. "why" is not one: it asks for a cause, which a read tool named
// after something else may hold.
//
// A yes/no question starts with an auxiliary verb ("is the pipeline
// green", "did the deploy finish"): leadQuestionWords count only as a
// query's first word, and not before "there" ("is there a tool to ..."
// frames a request). "do" and "have" are left out: they also start
// commands ("do a dry run").
var (
	questionWords     = []string{"what", "which", "who", "how", "whats", "whos", "when", "where"}
	leadQuestionWords = []string{"is", "are", "was", "were", "did", "does", "has"}
	questionTerms     = []string{"list", "get", "show"}
)

// isQuestion reports whether query contains one of questionWords or
// starts with one of leadQuestionWords not followed by "there".
func isQuestion(query string) bool {
	start, n := -1, 0 // n: words seen
	lead := false     // the first word is a leadQuestionWord
	for i := 0; i <= len(query); i++ {
		letter := i < len(query) && ('a' <= query[i]|0x20 && query[i]|0x20 <= 'z')
		switch {
		case letter && start < 0:
			start = i
		case !letter && start >= 0:
			w := lowerASCIIFast(query[start:i])
			start = -1
			n++
			switch {
			case containsString(questionWords, w):
				return true
			case n == 1:
				lead = containsString(leadQuestionWords, w)
			case n == 2 && lead && w != "there":
				return true
			}
		}
	}
	return false
}

// synonymTable maps a term to the other terms of every group it is in.
type synonymTable map[string][]string

// buildSynonyms normalises groups with the index pipeline, so "Directory"
// and "directories" in a group both mean the term "directory".
func buildSynonyms(groups [][]string) synonymTable {
	table := synonymTable{}
	for _, g := range groups {
		var terms []string
		for _, w := range g {
			for _, t := range Tokenize(w) {
				if !containsString(terms, t) {
					terms = append(terms, t)
				}
			}
		}
		for _, t := range terms {
			for _, u := range terms {
				if u != t && !containsString(table[t], u) {
					table[t] = append(table[t], u)
				}
			}
		}
	}
	return table
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// queryTerm is a term of an expanded query, how much it counts, and the
// query word it stands for (origin: its position among the query's
// distinct terms, or noOrigin for terms a question adds).
type queryTerm struct {
	term   string
	weight float64
	origin uint8
	added  bool // by expansion, not a word of the query
}

// maxOrigins is how many distinct query terms coverage tells apart; later
// ones share the last origin.
const (
	maxOrigins = 64
	noOrigin   = 255
)

// expansion holds the weights of each source of added terms; a zero
// weight leaves that source out.
type expansion struct {
	synonyms             synonymTable
	synWeight            float64 // Options.Synonyms
	lexicon              *lexicon
	lexWeight, derWeight float64 // WordNet synonyms and derivations
	glossWeight          float64 // terms of WordNet noun definitions
	hyperWeight          float64 // WordNet verb hypernyms
	litWeight            float64 // a term of a literal; 0 leaves them out
}

// expandQuery turns the query's tokens into weighted terms: every distinct
// token with weight 1, or Options.LiteralWeight if each of its
// occurrences is part of a literal (lit[i]), then, for each, the terms
// related to it that are not already present: synonyms of
// Options.Synonyms, WordNet synonyms and derived words, each with its
// weight times the token's; a question adds questionTerms. The
// order is deterministic: tokens in query order, then added terms in
// table order.
func (x *expansion) expandQuery(dst []queryTerm, tokens []string, lit []bool, question bool) []queryTerm {
	find := func(term string) int {
		for i, q := range dst {
			if q.term == term {
				return i
			}
		}
		return -1
	}
	for i, tok := range tokens {
		w := 1.0
		if i < len(lit) && lit[i] {
			w = x.litWeight
		}
		if w <= 0 {
			continue
		}
		if j := find(tok); j >= 0 {
			dst[j].weight = max(dst[j].weight, w)
			continue
		}
		dst = append(dst, queryTerm{term: tok, weight: w, origin: uint8(min(len(dst), maxOrigins-1))})
	}
	add := func(term string, w float64, origin uint8) {
		if w > 0 && find(term) < 0 {
			dst = append(dst, queryTerm{term: term, weight: w, origin: origin, added: true})
		}
	}
	n := len(dst)
	for i := 0; i < n; i++ {
		t, o, k := dst[i].term, dst[i].origin, dst[i].weight
		if x.synWeight > 0 {
			for _, syn := range x.synonyms[t] {
				add(syn, k*x.synWeight, o)
			}
		}
		if x.lexicon != nil && x.lexWeight > 0 {
			for syn := range x.lexicon.synonyms(t) {
				add(syn, k*x.lexWeight, o)
			}
		}
		if x.lexicon != nil && x.derWeight > 0 {
			for der := range x.lexicon.derived(t) {
				add(der, k*x.derWeight, o)
			}
		}
		if x.lexicon != nil && x.hyperWeight > 0 {
			for h := range x.lexicon.hypernyms(t) {
				add(h, k*x.hyperWeight, o)
			}
		}
		if x.lexicon != nil && x.glossWeight > 0 {
			for gw := range x.lexicon.gloss(t) {
				add(gw, k*x.glossWeight, o)
			}
		}
	}
	if question {
		for _, q := range questionTerms {
			add(q, x.synWeight, noOrigin)
		}
	}
	return dst
}
