package search

import (
	"bytes"
	"compress/gzip"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

func TestLexicon(t *testing.T) {
	lx := defaultLexicon()
	if len(lx.related) < 20000 || len(lx.infl) < 1000 {
		t.Fatalf("lexicon has %d entries and %d inflections; the embedded table is missing or cut",
			len(lx.related), len(lx.infl))
	}
	tests := []struct {
		rel         func(string) iter.Seq[string]
		term, other string
	}{
		{lx.synonyms, "delete", "erase"},
		{lx.synonyms, "bill", "invoice"},
		{lx.derived, "delete", "deletion"},
		{lx.derived, "payment", "pay"},
		{lx.derived, "invitation", "invite"},
		{lx.gloss, "invoice", "statement"},
		{lx.hypernyms, "book", "schedule"},
		{lx.hypernyms, "locate", "find"},
	}
	for _, tt := range tests {
		got := slices.Collect(tt.rel(Stem(tt.term)))
		if !slices.Contains(got, Stem(tt.other)) {
			t.Errorf("%q relates to %v, want %q among them", tt.term, got, Stem(tt.other))
		}
	}
	for form, want := range map[string]string{"sent": "send", "wrote": "write", "ran": "run", "files": "files"} {
		if got := lx.lemma(form); got != want {
			t.Errorf("lemma(%q) = %q, want %q", form, got, want)
		}
	}
}

func TestParseLexiconMalformed(t *testing.T) {
	lx := parseLexicon("# comment\nno tabs\nthree\tcolumns\tonly\nfour\ta\tb\tc\n" +
		"delet\teras cancel\tdeletion\tremov\tremov\nx\ta\tb\tc\td\te\n>sent\tsend\n>\tx\n")
	if got := slices.Collect(lx.synonyms("delet")); !slices.Equal(got, []string{"eras", "cancel"}) {
		t.Errorf("synonyms(delet) = %v", got)
	}
	if got := slices.Collect(lx.gloss("delet")); !slices.Equal(got, []string{"remov"}) {
		t.Errorf("gloss(delet) = %v", got)
	}
	if got := slices.Collect(lx.hypernyms("delet")); !slices.Equal(got, []string{"remov"}) {
		t.Errorf("hypernyms(delet) = %v", got)
	}
	if len(lx.related) != 1 || len(lx.infl) != 1 || lx.lemma("sent") != "send" {
		t.Errorf("related = %v, infl = %v", lx.related, lx.infl)
	}
}

func FuzzParseLexicon(f *testing.F) {
	f.Add("delet\teras cancel\tdeletion\tremov\tremov\n>sent\tsend\n")
	f.Fuzz(func(t *testing.T, raw string) {
		lx := parseLexicon(raw)
		for k, e := range lx.related {
			for w := range words(e.syn + " " + e.der + " " + e.gloss + " " + e.hyper) {
				if w == "" || k == "" {
					t.Fatalf("empty term in %q: %+v", k, e)
				}
			}
		}
	})
}

// TestLexiconCurrent regenerates the table from the WordNet files where
// they are installed (Debian's wordnet-base) and compares it with the
// embedded one, so a change to the stemmer or the generator that is not
// followed by go generate fails.
func TestLexiconCurrent(t *testing.T) {
	if _, err := os.Stat("/usr/share/wordnet/data.noun"); err != nil {
		t.Skip("WordNet is not installed (apt-get install wordnet-base)")
	}
	if testing.Short() {
		t.Skip("regenerates the lexicon")
	}
	out := filepath.Join(t.TempDir(), "lexicon.txt.gz")
	cmd := exec.Command("go", "run", "./internal/wordnetgen", "-dict", "/usr/share/wordnet", "-out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("wordnetgen: %v\n%s", err, b)
	}
	got, want := gunzip(t, out), gunzip(t, "wordnet/lexicon.txt.gz")
	if !bytes.Equal(got, want) {
		t.Fatal("wordnet/lexicon.txt.gz is stale: run go generate ./pkg/search")
	}
}

func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func BenchmarkLexiconLoad(b *testing.B) {
	for b.Loop() {
		defaultLexiconLoad()
	}
}
