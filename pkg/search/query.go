package search

import "strings"

// Query parsing: agents wrap what they want in words that name no tool
// ("I need a tool to", "help me", "can you"). They are dropped before the
// query is tokenised: the run of wrapperWords a query starts with, and a
// "tool" spelled as the object of the request ("is there a tool that",
// "find me a tool for").

// wrapperWords start a query without saying what it is about. Stop words
// are dropped by [Tokenize] anyway; these are the others that, at the
// start of a query, only frame the request.
var wrapperWords = map[string]bool{
	"need": true, "needs": true, "want": true, "wanna": true, "like": true, "id": true,
	"help": true, "please": true, "tool": true, "tools": true, "way": true, "function": true,
	"something": true, "use": true, "using": true, "looking": true, "trying": true, "try": true,
	"able": true, "got": true, "gotta": true, "must": true, "hey": true, "hi": true,
	"ok": true, "okay": true, "now": true, "quickly": true,
}

// toolWords name a tool in a request ("a tool that ..."); toolLinks follow
// such a word ("to", "that", "for", "which", "capable").
var (
	toolWords = map[string]bool{"tool": true, "tools": true, "function": true, "command": true}
	toolLinks = map[string]bool{"to": true, "that": true, "for": true, "which": true, "can": true, "capable": true}
)

// maxQueryBytes bounds the query text that is read; the rest is ignored.
const maxQueryBytes = 4096

// stripWrapper returns query without its framing words, the rest as it
// is (punctuation included), or query itself when there are none.
func stripWrapper(query string) string {
	if len(query) > maxQueryBytes {
		query = query[:maxQueryBytes]
	}
	var b strings.Builder
	head := true // still in the leading run of framing words
	prevArticle := false
	pos := 0 // query[:pos] is written or dropped
	for start, end := range wordSpans(query) {
		w := lowerASCIIFast(dropApostrophes.Replace(query[start:end]))
		drop := false
		switch {
		case head && (wrapperWords[w] || IsStopWord(w)):
			drop = true
		case prevArticle && toolWords[w] && nextWordIn(query[end:], toolLinks):
			drop = true
		default:
			head = false
		}
		prevArticle = w == "a" || w == "an" || w == "the" || w == "some" || w == "any" || w == "me"
		if drop {
			b.WriteString(query[pos:start])
			for pos = end; pos < len(query) && query[pos] == ' '; pos++ {
			}
		}
	}
	if pos == 0 {
		return query
	}
	b.WriteString(query[pos:])
	return b.String()
}

// nextWordIn reports whether the first word of s is in set.
func nextWordIn(s string, set map[string]bool) bool {
	for start, end := range wordSpans(s) {
		return set[lowerASCIIFast(s[start:end])]
	}
	return false
}

// wordSpans yields the byte spans of the runs of letters, digits,
// apostrophes, "_" and "-" in s, in order.
func wordSpans(s string) func(yield func(int, int) bool) {
	return func(yield func(int, int) bool) {
		start := -1
		for i := 0; i <= len(s); i++ {
			in := i < len(s) && isWordByte(s[i])
			switch {
			case in && start < 0:
				start = i
			case !in && start >= 0:
				if !yield(start, i) {
					return
				}
				start = -1
			}
		}
	}
}

func isWordByte(c byte) bool {
	return c >= 0x80 || c == '\'' || c == '_' || c == '-' ||
		('0' <= c && c <= '9') || ('a' <= c|0x20 && c|0x20 <= 'z')
}

// appendQueryTokens appends the terms of query to terms, exactly as
// [Tokenize] gives them, to words, for each term, the word of query it
// came from, and to lit whether that word is part of a literal (see
// isLiteral).
func appendQueryTokens(terms, words []string, lit []bool, query string) ([]string, []string, []bool) {
	for chunk := range strings.FieldsSeq(query) {
		l := isLiteral(chunk)
		forEachWord(chunk, func(word string) {
			n := len(terms)
			terms = appendWordParts(terms, word)
			for range len(terms) - n {
				words = append(words, word)
				lit = append(lit, l)
			}
		})
	}
	return terms, words, lit
}

// isLiteral reports whether chunk, a run of the query without spaces, is
// a value rather than words: a path, file or host name, identifier, key
// or expression ("/var/log/app.log", "PROJ-77", "http_requests_total",
// "up{job=\"api\"}"), which names what a tool is given, not what it does.
// Punctuation that ends or starts a sentence's word does not count.
func isLiteral(chunk string) bool {
	chunk = strings.Trim(chunk, ".,;:!?\"'`()")
	for i := 0; i < len(chunk); i++ {
		switch c := chunk[i]; c {
		case '/', '.', '_', '{', '}', '=', ':', '@', '#', '*', '(', ')', '[', ']', '\\', '<', '>', '|', '$', '%', '&', '+', '~':
			return true
		case '-':
			if (i > 0 && isDigit(chunk[i-1])) || (i+1 < len(chunk) && isDigit(chunk[i+1])) {
				return true
			}
		}
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
