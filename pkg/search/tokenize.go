package search

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tokenize returns the index terms of s, in order of appearance (duplicates
// kept). Documents and queries go through exactly this pipeline:
//
//  1. split on every rune that is neither a letter nor a digit, so "_", "-",
//     ".", "/" and whitespace all separate words; an apostrophe inside a
//     word is dropped instead ("customer's" → "customers", "won't" →
//     "wont");
//  2. split each word at case and digit boundaries: "getHTTPResponse2" gives
//     get, HTTP, Response, 2 (a run of capitals ends before the capital that
//     starts the next lower-case word);
//  3. lowercase;
//  4. drop English stop words (see [IsStopWord]) and single letters (digits
//     are kept, so "s3" still contributes "3");
//  5. spell out common abbreviations, looked up on the whole word before
//     step 2 and on each part ("repo" → repository, "k8s" → kubernetes,
//     "PR" → pull request), and take the lemma of irregular verb forms
//     ("sent" → send);
//  6. stem with [Stem].
func Tokenize(s string) []string {
	return appendTokens(nil, s)
}

// appendTokens appends the terms of s to dst and returns the extended slice.
func appendTokens(dst []string, s string) []string {
	forEachWord(s, func(word string) { dst = appendWordParts(dst, word) })
	return dst
}

// forEachWord calls fn with each word of s in order: each maximal run of
// letters and digits, with the apostrophes inside it.
func forEachWord(s string, fn func(word string)) {
	start := -1 // byte offset of the current run, or -1
	for i := 0; i < len(s); {
		c, size := s[i], 1
		var in bool
		if c < utf8.RuneSelf {
			in = asciiWord[c] || (start >= 0 && c == '\'')
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			in = unicode.IsLetter(r) || unicode.IsDigit(r) || (start >= 0 && isApostrophe(r))
		}
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			fn(s[start:i])
			start = -1
		}
		i += size
	}
	if start >= 0 {
		fn(s[start:])
	}
}

// asciiWord marks the ASCII letters and digits.
var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := range utf8.RuneSelf {
		t[c] = unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
	}
	return t
}()

type runeClass uint8

const (
	classLower runeClass = iota // lower-case or uncased letter
	classUpper
	classDigit
)

func classify(r rune) runeClass {
	switch {
	case isApostrophe(r):
		return classLower // never starts a part: "Don't" stays one word
	case unicode.IsDigit(r):
		return classDigit
	case unicode.IsUpper(r):
		return classUpper
	default:
		return classLower
	}
}

// appendWordParts splits one alphanumeric run at camelCase, PascalCase and
// letter/digit boundaries and appends the normalised parts.
func appendWordParts(dst []string, word string) []string {
	if len(word) <= maxAbbreviationLen {
		if out, ok := expandAbbreviation(dst, lowerASCIIFast(word)); ok {
			return out
		}
	}
	partStart := 0
	prevClass := runeClass(255)
	for i, r := range word {
		c := classify(r)
		if i > 0 && isBoundary(prevClass, c, word[i:], r) {
			dst = appendTerm(dst, word[partStart:i])
			partStart = i
		}
		prevClass = c
	}
	return appendTerm(dst, word[partStart:])
}

// isBoundary reports whether a new part starts at rest (whose first rune r
// has class c) given the class of the previous rune.
func isBoundary(prev, c runeClass, rest string, r rune) bool {
	switch {
	case prev == classDigit || c == classDigit:
		return prev != c
	case prev == classLower && c == classUpper:
		return true
	case prev == classUpper && c == classUpper:
		// "HTTPResponse": split before the "R" because "e" follows it.
		// But "PRs", "IDs": a plural "s" ending the capitals' run is theirs.
		after := rest[utf8.RuneLen(r):]
		next, size := utf8.DecodeRuneInString(after)
		if next == 's' {
			third, _ := utf8.DecodeRuneInString(after[size:])
			if third == utf8.RuneError || classify(third) != classLower {
				return false
			}
		}
		return next != utf8.RuneError && classify(next) == classLower
	}
	return false
}

func isApostrophe(r rune) bool { return r == '\'' || r == '\u2019' }

var dropApostrophes = strings.NewReplacer("'", "", "\u2019", "")

// appendTerm lowercases, filters and stems one word part.
func appendTerm(dst []string, part string) []string {
	if strings.IndexByte(part, '\'') >= 0 || strings.Contains(part, "\u2019") {
		part = dropApostrophes.Replace(part)
	}
	if part == "" {
		return dst
	}
	w := lowerASCIIFast(part)
	if IsStopWord(w) {
		return dst
	}
	if out, ok := expandAbbreviation(dst, w); ok {
		return out
	}
	w = defaultLexicon().lemma(w)
	if utf8.RuneCountInString(w) == 1 {
		r, _ := utf8.DecodeRuneInString(w)
		if !unicode.IsDigit(r) {
			return dst
		}
	}
	return append(dst, Stem(w))
}

// lowerASCIIFast lowercases s, avoiding an allocation when it already is.
func lowerASCIIFast(s string) string {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			return strings.ToLower(s)
		}
	}
	return s
}

// stopWords is a deliberately small list: function words that carry no
// meaning for tool selection. Verbs such as "get", "list" or "create" are
// not stop words; they are what distinguishes tools of one backend.
var stopWords = map[string]struct{}{
	"a": {}, "about": {}, "all": {}, "also": {}, "am": {}, "an": {}, "and": {},
	"any": {}, "are": {}, "as": {}, "at": {}, "be": {}, "been": {}, "but": {},
	"by": {}, "can": {}, "could": {}, "did": {}, "do": {}, "does": {}, "e": {},
	"eg": {}, "etc": {}, "for": {}, "from": {}, "had": {}, "has": {}, "have": {},
	"he": {}, "her": {}, "his": {}, "how": {}, "i": {}, "ie": {}, "if": {},
	"in": {}, "into": {}, "is": {}, "it": {}, "its": {}, "just": {}, "me": {},
	"my": {}, "of": {}, "on": {}, "or": {}, "our": {}, "please": {}, "she": {},
	"should": {}, "so": {}, "some": {}, "that": {}, "the": {}, "their": {},
	"them": {}, "then": {}, "there": {}, "these": {}, "they": {}, "this": {},
	"those": {}, "to": {}, "us": {}, "was": {}, "we": {}, "were": {}, "what": {},
	"when": {}, "where": {}, "which": {}, "who": {}, "whose": {}, "why": {},
	"will": {}, "with": {}, "would": {}, "you": {}, "your": {},
	// Contractions, as the apostrophe rule above leaves them.
	"cant": {}, "didnt": {}, "doesnt": {}, "dont": {}, "hasnt": {}, "havent": {},
	"im": {}, "isnt": {}, "ive": {}, "lets": {}, "thats": {}, "theres": {},
	"wasnt": {}, "werent": {}, "whats": {}, "wheres": {}, "whos": {}, "wont": {},
	"youre": {},
}

// IsStopWord reports whether the lower-case word w is dropped by [Tokenize].
func IsStopWord(w string) bool {
	_, ok := stopWords[w]
	return ok
}
