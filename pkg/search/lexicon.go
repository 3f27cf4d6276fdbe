package search

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"iter"
	"strings"
	"sync"
)

//go:generate go run ./internal/wordnetgen -dict /usr/share/wordnet -out wordnet/lexicon.txt.gz

// lexiconGz is the English lexicon derived from WordNet 3.0 (see
// wordnet/LICENSE-WordNet and internal/wordnetgen): synonyms of each
// word's most frequent senses, derivationally related words and irregular
// verb forms, the first terms of each noun's definition, and the direct
// hypernyms of each verb's most frequent senses, keyed by index term.
//
//go:embed wordnet/lexicon.txt.gz
var lexiconGz []byte

// lexicon is the parsed table. Related terms are kept as the
// space-separated text of the table (substrings of one string), split
// only when a query asks for them.
type lexicon struct {
	related map[string]lexEntry
	infl    map[string]string // irregular verb form → its lemma, both lower case
}

type lexEntry struct{ syn, der, gloss, hyper string }

// maxLexiconBytes bounds the decompressed embedded table, which is
// trusted but read defensively.
const maxLexiconBytes = 8 << 20

// defaultLexicon is parsed once, on first use.
var defaultLexicon = sync.OnceValue(defaultLexiconLoad)

func defaultLexiconLoad() *lexicon {
	zr, err := gzip.NewReader(bytes.NewReader(lexiconGz))
	if err != nil {
		return parseLexicon("")
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxLexiconBytes))
	if err != nil {
		return parseLexicon("")
	}
	return parseLexicon(string(raw))
}

// parseLexicon reads the table format internal/wordnetgen writes:
// "term<TAB>synonyms<TAB>derived<TAB>gloss<TAB>hypernyms" lines, ">form<TAB>lemma"
// lines and "#" comments. Malformed lines are skipped.
func parseLexicon(raw string) *lexicon {
	lx := &lexicon{related: make(map[string]lexEntry, 50000), infl: make(map[string]string, 2500)}
	for line := range strings.SplitSeq(raw, "\n") {
		switch {
		case line == "" || line[0] == '#':
		case line[0] == '>':
			form, lemma, ok := strings.Cut(line[1:], "\t")
			if ok && form != "" && lemma != "" && !strings.Contains(lemma, "\t") {
				lx.infl[form] = lemma
			}
		default:
			term, rest, ok := strings.Cut(line, "\t")
			syn, rest, ok2 := strings.Cut(rest, "\t")
			der, rest, ok3 := strings.Cut(rest, "\t")
			gloss, hyper, ok4 := strings.Cut(rest, "\t")
			if ok && ok2 && ok3 && ok4 && term != "" && !strings.Contains(hyper, "\t") {
				lx.related[term] = lexEntry{syn: syn, der: der, gloss: gloss, hyper: hyper}
			}
		}
	}
	return lx
}

// lemma returns the lemma of an irregular verb form ("sent" → "send"),
// else w.
func (lx *lexicon) lemma(w string) string {
	if l, ok := lx.infl[w]; ok {
		return l
	}
	return w
}

// synonyms, derived and gloss yield the terms related to term.
func (lx *lexicon) synonyms(term string) iter.Seq[string]  { return words(lx.related[term].syn) }
func (lx *lexicon) derived(term string) iter.Seq[string]   { return words(lx.related[term].der) }
func (lx *lexicon) gloss(term string) iter.Seq[string]     { return words(lx.related[term].gloss) }
func (lx *lexicon) hypernyms(term string) iter.Seq[string] { return words(lx.related[term].hyper) }

func words(s string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for w := range strings.SplitSeq(s, " ") {
			if w != "" && !yield(w) {
				return
			}
		}
	}
}
