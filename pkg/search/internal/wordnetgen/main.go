// Command wordnetgen derives the lexicon table of package search from the
// WordNet 3.0 database files (Debian's wordnet-base package installs them
// in /usr/share/wordnet). Run it from pkg/search through go generate:
//
//	apt-get install wordnet-base
//	go generate ./pkg/search
//
// The table keeps, for each single-word lemma, the other single-word
// lemmas of its most frequent senses (synonyms) and the lemmas its
// derivational pointers of those senses lead to ("delete" → "deletion",
// "payment" → "pay"), plus the irregular verb forms of the exception list
// ("ran" → "run", "sent" → "send"), and the first glossWords terms of the
// definition of each noun's most frequent sense ("invoice" → "itemized
// statement money"), and the lemmas of the direct hypernyms of each
// verb's kept senses ("book" → "schedule", "locate" → "find"). Nouns of lexicographer files that name no
// software concept (animals, plants, foods, body parts, substances,
// places, natural objects, feelings, motives, shapes) are left out, and so
// are proper nouns, so the table stays small.
//
// Output format, one entry a line, sorted:
// "term<TAB>synonyms<TAB>derived<TAB>gloss<TAB>hypernyms"
// with the words as index terms (package search's stop words dropped, its
// stemmer applied, the words of one stem merged; space-separated), then
// ">form<TAB>lemma" for irregular verb forms. The first lines are "#"
// comments naming the source and its licence. The table must be generated
// again when the stemmer changes; TestLexiconCurrent checks it.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"flag"
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/search"
)

func main() {
	dict := flag.String("dict", "/usr/share/wordnet", "directory of the WordNet database files")
	out := flag.String("out", "wordnet/lexicon.txt.gz", "output file (gzip)")
	flag.Parse()
	g := &gen{syn: map[string]set{}, der: map[string]set{}, hyp: map[string]set{}, infl: map[string]string{}, gloss: map[string]string{}}
	for _, p := range parts {
		if err := g.readPOS(*dict, p); err != nil {
			log.Fatal(err)
		}
	}
	// Irregular verbs only: the stemmer handles plurals, and the noun
	// list maps forms such as "data" and "bases" to lemmas a catalog
	// does not mean ("datum", "basis").
	if err := g.readExceptions(filepath.Join(*dict, "verb.exc")); err != nil {
		log.Fatal(err)
	}
	var buf bytes.Buffer
	g.write(&buf)
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(buf.Bytes())
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, gz.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s: %d bytes (%d uncompressed), %d synonym, %d derivation, %d inflection, %d gloss entries",
		*out, gz.Len(), buf.Len(), len(g.syn), len(g.der), len(g.infl), len(g.gloss))
}

// pos is one WordNet part of speech and how many of a lemma's senses,
// most frequent first, the table keeps.
type pos struct {
	name   string // file suffix
	senses int
}

var parts = []pos{{"verb", 2}, {"noun", 2}, {"adj", 1}, {"adv", 1}}

// skipNounFiles are the noun lexicographer files (lexnames(5WN)) left out.
var skipNounFiles = map[int]bool{
	5: true, 8: true, 12: true, 13: true, 15: true, 16: true, 17: true, 20: true, 25: true, 27: true,
}

type set map[string]bool

type synset struct {
	words []string // single-word lemmas, lower case; "" for ones left out
	ptrs  []pointer
	hyper []string // offsets of the verb synsets this one's hypernym pointers lead to
	skip  bool
	def   string // the gloss's definition, before its examples
}

// glossWords is how many terms of a noun's definition the table keeps.
const glossWords = 3

// pointer is a derivational ("+") pointer from word src of its synset
// (1-based) to word dst of synset off.
type pointer struct {
	src, dst int
	off      string
	pos      byte
}

type gen struct {
	data      map[byte]map[string]*synset // by pos letter, by offset
	syn, der  map[string]set
	hyp       map[string]set // verb lemma → the lemmas of its kept senses' hypernyms
	infl      map[string]string
	gloss     map[string]string   // noun lemma → definition of its first sense
	headwords map[string][]string // lemma → kept synset offsets, keyed "pos:offset"
}

var posLetter = map[string]byte{"noun": 'n', "verb": 'v', "adj": 'a', "adv": 'r'}

func (g *gen) readPOS(dict string, p pos) error {
	if g.data == nil {
		g.data = map[byte]map[string]*synset{}
	}
	letter := posLetter[p.name]
	if g.data[letter] == nil {
		g.data[letter] = map[string]*synset{}
	}
	if err := g.readData(filepath.Join(dict, "data."+p.name), letter); err != nil {
		return err
	}
	// Pointers may lead to other parts of speech: read them all before
	// resolving, so do that once every data file is in.
	if p.name != parts[len(parts)-1].name {
		return nil
	}
	for _, q := range parts {
		if err := g.readIndex(filepath.Join(dict, "index."+q.name), posLetter[q.name], q.senses); err != nil {
			return err
		}
	}
	return nil
}

// readData reads a data.* file: "offset lexfile pos w_cnt word lex_id ...
// p_cnt ptr... | gloss".
func (g *gen) readData(path string, letter byte) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") {
			continue // licence header
		}
		body, gloss, _ := strings.Cut(line, " | ")
		fs := strings.Fields(body)
		if len(fs) < 5 {
			continue
		}
		lexfile, _ := strconv.Atoi(fs[1])
		n, err := strconv.ParseInt(fs[3], 16, 0)
		if err != nil {
			return fmt.Errorf("%s: word count %q: %w", path, fs[3], err)
		}
		def, _, _ := strings.Cut(gloss, ";")
		s := &synset{skip: letter == 'n' && skipNounFiles[lexfile], def: strings.TrimSpace(def)}
		i := 4
		for range n {
			w := fs[i]
			i += 2
			if j := strings.IndexByte(w, '('); j >= 0 { // adjective marker "(a)"
				w = w[:j]
			}
			if !plainWord(w) {
				w = ""
			}
			s.words = append(s.words, w)
		}
		pc, _ := strconv.Atoi(fs[i])
		i++
		for range pc {
			sym, off, pl, st := fs[i], fs[i+1], fs[i+2], fs[i+3]
			i += 4
			if sym == "@" && letter == 'v' && pl == "v" {
				s.hyper = append(s.hyper, off)
			}
			if sym != "+" {
				continue
			}
			src, _ := strconv.ParseInt(st[:2], 16, 0)
			dst, _ := strconv.ParseInt(st[2:], 16, 0)
			s.ptrs = append(s.ptrs, pointer{src: int(src), dst: int(dst), off: off, pos: pl[0]})
		}
		g.data[letter][fs[0]] = s
	}
	return sc.Err()
}

// plainWord reports whether w is a lower-case single word of letters
// (proper nouns, collocations "take_a_breath" and hyphenated forms are
// left out).
func plainWord(w string) bool {
	if len(w) < 2 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// readIndex reads an index.* file: "lemma pos synset_cnt p_cnt ptr...
// sense_cnt tagsense_cnt offset...", offsets most frequent sense first.
func (g *gen) readIndex(path string, letter byte, senses int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "  ") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) < 6 || !plainWord(fs[0]) {
			continue
		}
		lemma := fs[0]
		cnt, _ := strconv.Atoi(fs[2])
		pcnt, _ := strconv.Atoi(fs[3])
		offs := fs[4+pcnt+2:]
		if len(offs) != cnt {
			return fmt.Errorf("%s: %s: %d offsets, want %d", path, lemma, len(offs), cnt)
		}
		for i, off := range offs[:min(senses, len(offs))] {
			s := g.data[letter][off]
			if s == nil || s.skip {
				continue
			}
			if i == 0 && letter == 'n' {
				g.gloss[lemma] = s.def
			}
			for _, off := range s.hyper {
				if h := g.data['v'][off]; h != nil {
					for _, w := range h.words {
						if w != "" && w != lemma {
							add(g.hyp, lemma, w)
						}
					}
				}
			}
			k := slices.Index(s.words, lemma)
			for _, w := range s.words {
				if w != "" && w != lemma {
					add(g.syn, lemma, w)
				}
			}
			for _, p := range s.ptrs {
				if p.src != 0 && p.src != k+1 {
					continue
				}
				t := g.data[p.pos][p.off]
				if t == nil || t.skip || p.dst < 1 || p.dst > len(t.words) {
					continue
				}
				if w := t.words[p.dst-1]; w != "" && w != lemma {
					add(g.der, lemma, w)
				}
			}
		}
	}
	return sc.Err()
}

func add(m map[string]set, k, v string) {
	if m[k] == nil {
		m[k] = set{}
	}
	m[k][v] = true
}

// readExceptions reads an *.exc file: "inflected_form base_form...".
func (g *gen) readExceptions(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 2 || !plainWord(fs[0]) || !plainWord(fs[1]) {
			continue
		}
		if _, ok := g.infl[fs[0]]; !ok {
			g.infl[fs[0]] = fs[1]
		}
	}
	return nil
}

// write emits the table keyed by index term: words go through the index's
// own stop-word list and stemmer, and the words of one stem are merged.
func (g *gen) write(w *bytes.Buffer) {
	type entry struct {
		syn, der, hyp set
		gloss         []string
	}
	byTerm := map[string]*entry{}
	get := func(k string) *entry {
		e := byTerm[k]
		if e == nil {
			e = &entry{syn: set{}, der: set{}, hyp: set{}}
			byTerm[k] = e
		}
		return e
	}
	term := func(w string) string {
		if search.IsStopWord(w) {
			return ""
		}
		return search.Stem(w)
	}
	for _, kind := range []struct {
		m    map[string]set
		pick func(*entry) set
	}{{g.syn, func(e *entry) set { return e.syn }}, {g.der, func(e *entry) set { return e.der }},
		{g.hyp, func(e *entry) set { return e.hyp }}} {
		for k, vs := range kind.m {
			kt := term(k)
			if kt == "" {
				continue
			}
			for v := range vs {
				vt := term(v)
				if vt == "" || vt == kt {
					continue
				}
				kind.pick(get(kt))[vt] = true
			}
		}
	}
	// Glosses: lemmas in order, so the words of one stem fill its
	// glossWords terms in a fixed order.
	for _, k := range slices.Sorted(maps.Keys(g.gloss)) {
		kt := term(k)
		if kt == "" {
			continue
		}
		for _, t := range search.Tokenize(g.gloss[k]) {
			e := get(kt)
			if len(e.gloss) == glossWords {
				break
			}
			if t != kt && !slices.Contains(e.gloss, t) {
				e.gloss = append(e.gloss, t)
			}
		}
	}
	w.WriteString("# Derived from WordNet 3.0 by pkg/search/internal/wordnetgen; see LICENSE-WordNet.\n")
	w.WriteString("# term<TAB>synonym terms<TAB>derived terms<TAB>gloss terms<TAB>verb hypernym terms, then >irregular-form<TAB>lemma.\n")
	for _, k := range slices.Sorted(maps.Keys(byTerm)) {
		e := byTerm[k]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", k, strings.Join(slices.Sorted(maps.Keys(e.syn)), " "),
			strings.Join(slices.Sorted(maps.Keys(e.der)), " "), strings.Join(e.gloss, " "),
			strings.Join(slices.Sorted(maps.Keys(e.hyp)), " "))
	}
	for _, k := range slices.Sorted(maps.Keys(g.infl)) {
		fmt.Fprintf(w, ">%s\t%s\n", k, g.infl[k])
	}
}
