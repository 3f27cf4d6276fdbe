package search

import "strings"

// Stem strips common English inflections from the lower-case word w. It is a
// light, rule-based suffix stripper, not a full Porter stemmer; the only goal
// is that the forms of one word a tool description and an agent's query are
// likely to use meet on the same term. Rules, applied in order:
//
//  1. plurals: "-ies" → "-y" (queries → query); "-es" is dropped after s, x,
//     z, ch, sh (branches → branch, boxes → box); otherwise a final "-s" is
//     dropped unless the word ends in "ss", "us" or "is" (status, analysis).
//  2. verb endings: "-ied" → "-y" (applied → apply); "-ing" and "-ed" are
//     dropped when the remaining stem has at least three letters and a vowel
//     and, for "-ed", does not end in "e" (string, need and speed stay). A
//     doubled final consonant left behind is undone when the stem is longer
//     than three letters (running → run, stopped → stop; adding → add).
//  3. a final silent "e" is dropped from words longer than three letters,
//     except after another "e" (create, creates, created and creating all
//     become "creat"; free stays).
//
// Words containing a digit are returned unchanged.
func Stem(w string) string {
	if len(w) <= 3 || hasDigit(w) {
		return w
	}
	w = stripPlural(w)
	w = stripVerbEnding(w)
	if len(w) > 3 && w[len(w)-1] == 'e' && w[len(w)-2] != 'e' {
		w = w[:len(w)-1]
	}
	return w
}

func stripPlural(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"),
		strings.HasSuffix(w, "zes"), strings.HasSuffix(w, "ches"),
		strings.HasSuffix(w, "shes"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:len(w)-1]
	}
	return w
}

func stripVerbEnding(w string) string {
	var stem string
	switch {
	case strings.HasSuffix(w, "ied") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "ing"):
		stem = w[:len(w)-3]
	case strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		stem = w[:len(w)-2]
	default:
		return w
	}
	if len(stem) < 3 || !strings.ContainsAny(stem, "aeiouy") {
		return w
	}
	n := len(stem)
	if n > 3 && stem[n-1] == stem[n-2] && isDoublable(stem[n-1]) {
		stem = stem[:n-1]
	}
	return stem
}

// isDoublable reports whether a doubled final c is an inflection artefact:
// consonants other than l, s and z (billing, passing and buzzing keep theirs).
func isDoublable(c byte) bool {
	if c < 'a' || c > 'z' {
		return false
	}
	switch c {
	case 'a', 'e', 'i', 'o', 'u', 'l', 's', 'z':
		return false
	}
	return true
}

func hasDigit(w string) bool {
	for i := 0; i < len(w); i++ {
		if '0' <= w[i] && w[i] <= '9' {
			return true
		}
	}
	return false
}
