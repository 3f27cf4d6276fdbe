package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads and parses the fleet config at path. Errors name the path,
// the line and the field, see Parse.
func Load(path string) (*Fleet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config %q: %w", path, err)
	}
	return Parse(path, data)
}

// Parse parses and validates a fleet config. name is the file name used in
// errors. It returns the first problem found, in document order, as a
// *FieldError, so that the caller can print one clear line.
func Parse(name string, data []byte) (*Fleet, error) {
	d := &decoder{file: name}
	if len(data) > MaxSize {
		return nil, d.errorf(0, "", "config is %d bytes, limit %d", len(data), MaxSize)
	}
	root, err := d.document(data)
	if err != nil {
		return nil, err
	}
	return d.fleet(root)
}

// decoder walks a yaml.Node tree; file names the document in errors.
type decoder struct {
	file string
}

func (d *decoder) errorf(line int, field, format string, args ...any) *FieldError {
	return &FieldError{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

var syntaxLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// document parses data into the root node of its only YAML document.
func (d *decoder) document(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, d.errorf(0, "", "empty config: want a mapping with groups, health and aggregation")
		}
		return nil, d.syntaxError(data, err)
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, d.syntaxError(data, err)
	default:
		return nil, d.errorf(extra.Line, "", "a second YAML document: want exactly one")
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, d.errorf(doc.Line, "", "empty config: want a mapping with groups, health and aggregation")
	}
	return doc.Content[0], nil
}

func (d *decoder) syntaxError(data []byte, err error) error {
	msg := err.Error()
	m := syntaxLine.FindStringSubmatch(msg)
	if m == nil {
		return &FieldError{File: d.file, Msg: strings.Replace(msg, "yaml: ", "yaml syntax: ", 1), Err: err}
	}
	line, _ := strconv.Atoi(m[1])
	if l := problemLine(data, line, m[2]); l > 0 {
		line = l
	}
	return &FieldError{File: d.file, Line: line, Msg: "yaml syntax: " + m[2], Err: err}
}

// MaxSize is the largest fleet config Parse takes, in bytes: thousands of
// backends fit in it, and parsing it stays well under a second.
const MaxSize = 1 << 20

// maxProblemScan bounds the documents problemLine rescans, and
// maxProblemBytes the bytes of them it parses in all (each rescan parses
// a prefix of the document again: without this bound a file of 2,000
// lines took seconds per 40 KB).
const (
	maxProblemScan  = 2000
	maxProblemBytes = 4 << 20
)

// problemLine finds the line a YAML syntax error is really at. The parser
// reports the line where the enclosing block began (for a mis-indented key,
// the line of its parent mapping); the problem is at the first line whose
// prefix of the document fails with the same message. It returns 0 when no
// such line exists at or after reported, or when finding it would parse
// more than maxProblemBytes (then the reported line stands).
func problemLine(data []byte, reported int, problem string) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxProblemScan || reported < 1 {
		return 0
	}
	end, scanned := 0, 0
	for i, l := range lines {
		end += len(l)
		if i+1 < reported {
			continue
		}
		if scanned += end; scanned > maxProblemBytes {
			return 0
		}
		dec := yaml.NewDecoder(bytes.NewReader(data[:end]))
		for {
			var n yaml.Node
			err := dec.Decode(&n)
			if err == nil {
				continue
			}
			if m := syntaxLine.FindStringSubmatch(err.Error()); m != nil && m[2] == problem {
				return i + 1
			}
			break
		}
	}
	return 0
}

// entry is one key of a mapping with its value.
type entry struct {
	key, val *yaml.Node
	path     string
}

// line is the line of the field: its key's, or its value's when it has no
// key (a sequence item, a missing field placed at its parent).
func (e entry) line() int {
	if e.key != nil {
		return e.key.Line
	}
	return e.val.Line
}

// mapping checks that n is a mapping (or null, read as empty) whose keys are
// all in allowed and unique, and returns its entries by key.
func (d *decoder) mapping(n *yaml.Node, path string, allowed ...string) (map[string]entry, error) {
	n = deref(n)
	if isNull(n) {
		return map[string]entry{}, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, d.errorf(n.Line, path, "want a mapping, got %s", kindName(n))
	}
	out := make(map[string]entry, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		kp := join(path, k.Value)
		if k.Kind != yaml.ScalarNode {
			return nil, d.errorf(k.Line, path, "want a string key, got %s", kindName(k))
		}
		if !contains(allowed, k.Value) {
			return nil, d.errorf(k.Line, kp, "unknown key (want %s)", orList(allowed))
		}
		if prev, dup := out[k.Value]; dup {
			return nil, d.errorf(k.Line, kp, "duplicate key (first at line %d)", prev.key.Line)
		}
		out[k.Value] = entry{key: k, val: deref(v), path: kp}
	}
	return out, nil
}

// sequence checks that n is a sequence (or null, read as empty).
func (d *decoder) sequence(e entry) ([]*yaml.Node, error) {
	if isNull(e.val) {
		return nil, nil
	}
	if e.val.Kind != yaml.SequenceNode {
		return nil, d.errorf(e.line(), e.path, "want a sequence, got %s", kindName(e.val))
	}
	out := make([]*yaml.Node, len(e.val.Content))
	for i, c := range e.val.Content {
		out[i] = deref(c)
	}
	return out, nil
}

// str reads a string scalar; null and an absent entry give "".
func (d *decoder) str(e entry) (string, error) {
	if e.val == nil || isNull(e.val) {
		return "", nil
	}
	if e.val.Kind != yaml.ScalarNode {
		return "", d.errorf(e.line(), e.path, "want a string, got %s", kindName(e.val))
	}
	switch e.val.ShortTag() {
	case "!!str", "!!int", "!!float":
		return e.val.Value, nil
	}
	return "", d.errorf(e.line(), e.path, "want a string, got %s %q", kindName(e.val), e.val.Value)
}

func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "a string"
		case "!!int":
			return "an integer"
		case "!!float":
			return "a float"
		case "!!bool":
			return "a boolean"
		case "!!null":
			return "null"
		}
		return "a scalar " + n.ShortTag()
	}
	return "an unexpected node"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func orList(words []string) string {
	switch len(words) {
	case 0:
		return "no keys"
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}
