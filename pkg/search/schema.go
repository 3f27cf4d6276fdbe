package search

import (
	"encoding/json"
	"strings"
)

// MaxSchemaBytes bounds the input schema [Build] reads: a larger one
// contributes no parameter terms (the rest of its tool is indexed).
const MaxSchemaBytes = 1 << 20

// scanSchema calls name for each parameter name and desc for each piece
// of parameter description text found in the input schema raw. It reads
// "properties" recursively, descending through nested objects, array
// "items" (a schema or a list of schemas), "additionalProperties" and
// "anyOf"/"oneOf"/"allOf" branches, at most maxDepth levels deep (the
// top-level properties are level 1). For each property it takes the
// property name, and its "description", "title" and string "enum" values
// as description text. A schema that is not valid JSON, not an object or
// larger than MaxSchemaBytes contributes nothing; $ref is not resolved.
// Terms come in document order.
//
// The schema is scanned in place rather than decoded: only the few
// members above are looked at, and everything else is skipped without
// allocating. json.Valid checks the whole text first, so the scanner may
// trust its structure; its recursion is bounded by maxDepth and skipping
// is iterative, so a deeply nested schema costs no stack.
func scanSchema(raw string, maxDepth int, name, desc func(string)) {
	if len(raw) == 0 || len(raw) > MaxSchemaBytes || !json.Valid([]byte(raw)) {
		return
	}
	sc := schemaScanner{s: raw, maxDepth: maxDepth, name: name, desc: desc}
	sc.space()
	sc.schema(1, false)
}

// schemaTerms returns the terms of the parameter names and the parameter
// descriptions of an input schema (see scanSchema), appended to names and
// descs.
func schemaTerms(raw json.RawMessage, maxDepth int, names, descs []string) ([]string, []string) {
	scanSchema(string(raw), maxDepth,
		func(s string) { names = appendTokens(names, s) },
		func(s string) { descs = appendTokens(descs, s) })
	return names, descs
}

// schemaScanner walks a valid JSON text; s[i] is the next unread byte.
type schemaScanner struct {
	s          string
	i          int
	maxDepth   int
	name, desc func(string)
}

// schema reads the value at the cursor as a schema whose properties sit at
// depth; describe says it is a property's schema, whose description,
// title and enum are description text.
func (sc *schemaScanner) schema(depth int, describe bool) {
	if sc.peek() != '{' {
		sc.skip()
		return
	}
	descend := depth <= sc.maxDepth
	for key := range sc.members() {
		switch {
		case descend && key == "properties" && sc.peek() == '{':
			for prop := range sc.members() {
				sc.name(prop)
				sc.schema(depth+1, true)
			}
		case descend && key == "items" && sc.peek() == '[':
			for range sc.elements() {
				sc.schema(depth+1, false)
			}
		case descend && (key == "items" || key == "additionalProperties"):
			sc.schema(depth+1, false)
		case descend && (key == "anyOf" || key == "oneOf" || key == "allOf") && sc.peek() == '[':
			for range sc.elements() {
				sc.schema(depth+1, false)
			}
		case describe && (key == "description" || key == "title") && sc.peek() == '"':
			sc.desc(sc.str())
		case describe && key == "enum" && sc.peek() == '[':
			for range sc.elements() {
				if sc.peek() == '"' {
					sc.desc(sc.str())
				} else {
					sc.skip()
				}
			}
		default:
			sc.skip()
		}
	}
}

// members yields the keys of the object at the cursor, leaving the cursor
// on each member's value; the loop body must consume that value.
func (sc *schemaScanner) members() func(yield func(string) bool) {
	return func(yield func(string) bool) {
		sc.i++ // '{'
		sc.space()
		for sc.i < len(sc.s) && sc.s[sc.i] != '}' {
			key := sc.str()
			sc.space()
			sc.i++ // ':'
			sc.space()
			if !yield(key) {
				return
			}
			sc.space()
			if sc.i < len(sc.s) && sc.s[sc.i] == ',' {
				sc.i++
				sc.space()
			}
		}
		sc.i++ // '}'
		sc.space()
	}
}

// elements yields once per element of the array at the cursor, leaving
// the cursor on it; the loop body must consume the element.
func (sc *schemaScanner) elements() func(yield func(struct{}) bool) {
	return func(yield func(struct{}) bool) {
		sc.i++ // '['
		sc.space()
		for sc.i < len(sc.s) && sc.s[sc.i] != ']' {
			if !yield(struct{}{}) {
				return
			}
			sc.space()
			if sc.i < len(sc.s) && sc.s[sc.i] == ',' {
				sc.i++
				sc.space()
			}
		}
		sc.i++ // ']'
		sc.space()
	}
}

func (sc *schemaScanner) peek() byte {
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

func (sc *schemaScanner) space() {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\r', '\n':
			sc.i++
		default:
			return
		}
	}
}

// str reads the string at the cursor and returns its value; the cursor
// moves past it and the white space after it.
func (sc *schemaScanner) str() string {
	start, end, escaped := sc.strSpan()
	if !escaped {
		return sc.s[start:end]
	}
	var v string
	if json.Unmarshal([]byte(sc.s[start-1:min(end+1, len(sc.s))]), &v) != nil {
		return strings.ReplaceAll(sc.s[start:end], `\`, " ")
	}
	return v
}

// strSpan moves the cursor past the string at it, and the white space
// after, and returns the bounds of its raw contents and whether they hold
// an escape.
func (sc *schemaScanner) strSpan() (start, end int, escaped bool) {
	start = sc.i + 1
	end = start
	for end < len(sc.s) && sc.s[end] != '"' {
		if sc.s[end] == '\\' {
			escaped = true
			end++
		}
		end++
	}
	end = min(end, len(sc.s))
	sc.i = end + 1
	sc.space()
	return start, end, escaped
}

// skip moves the cursor past the value at it, and the white space after.
func (sc *schemaScanner) skip() {
	depth := 0
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case '"':
			sc.strSpan()
			if depth == 0 {
				return
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				sc.i++
				sc.space()
				return
			}
			if depth < 0 { // not at a value: leave the closer to the caller
				return
			}
		case ',', ':', ' ', '\t', '\r', '\n':
			if depth == 0 {
				sc.space()
				return
			}
		}
		sc.i++
	}
}
