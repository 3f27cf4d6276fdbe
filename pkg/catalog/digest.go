package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
)

// ProjectionVersion names the projection the catalog digest is computed
// over. A change to the projected fields or their treatment is a new
// version.
const ProjectionVersion = "v1"

// DigestPrefix starts every digest this package computes.
const DigestPrefix = "sha256:"

// projectedKeys are the tool members of projection v1 other than "name",
// in RFC 8785 key order. "name" sorts between inputSchema and outputSchema,
// at index namePos.
var projectedKeys = [...]string{"annotations", "description", "execution", "inputSchema", "outputSchema", "title"}

const namePos = 4

// projection is a tool reduced to projection v1, each member held in
// canonical form so that the projection can be re-assembled under any name
// without canonicalizing again.
type projection struct {
	name   string
	fields [len(projectedKeys)][]byte // canonical value; nil when absent
}

// Canonical returns the RFC 8785 (JCS) canonical form of the JSON value raw.
func Canonical(raw []byte) ([]byte, error) {
	if raw == nil {
		raw = []byte{}
	}
	out, err := jcs.Transform(raw)
	if err != nil {
		return nil, fmt.Errorf("canonicalize JSON: %w", err)
	}
	return out, nil
}

// project reduces a scanned tool definition to projection v1. A member is
// projected when its key is present, whatever its value (null included).
func project(obj object) (projection, error) {
	var p projection
	name, ok, err := obj.stringMember("name")
	if err != nil {
		return p, err
	}
	if !ok {
		return p, fmt.Errorf("name: missing")
	}
	p.name = name
	for i, key := range projectedKeys {
		val, ok, err := obj.get(key)
		if err != nil {
			return p, err
		}
		if !ok {
			continue
		}
		canon, err := canonicalValue(val)
		if err != nil {
			return p, fmt.Errorf("%s: canonicalize: %w", key, err)
		}
		p.fields[i] = canon
	}
	return p, nil
}

// canonicalValue returns the canonical form of val, a valid JSON value.
// Literals and strings without escapes are their own canonical form and
// are returned as they are; anything else goes through the JCS library.
func canonicalValue(val []byte) ([]byte, error) {
	switch {
	case string(val) == "true" || string(val) == "false" || string(val) == "null":
		return val, nil
	case val[0] == '"' && bytes.IndexByte(val, '\\') < 0 && utf8.Valid(val):
		return val, nil
	}
	return jcs.Transform(val)
}

// appendCanonical appends the canonical JSON of the projection, with name
// in place of the tool's own name.
func (p *projection) appendCanonical(dst []byte, name string) []byte {
	dst = append(dst, '{')
	for i, key := range projectedKeys {
		if i == namePos {
			if len(dst) > 1 {
				dst = append(dst, ',')
			}
			dst = append(dst, `"name":`...)
			dst = appendCanonicalString(dst, name)
		}
		if p.fields[i] == nil {
			continue
		}
		if len(dst) > 1 {
			dst = append(dst, ',')
		}
		dst = append(dst, '"')
		dst = append(dst, key...)
		dst = append(dst, `":`...)
		dst = append(dst, p.fields[i]...)
	}
	return append(dst, '}')
}

// digester hashes the canonical JSON array of a sequence of canonical
// elements, written in order.
type digester struct {
	h hash.Hash
	n int
}

func newDigester() *digester {
	d := &digester{h: sha256.New()}
	d.h.Write([]byte{'['})
	return d
}

func (d *digester) add(canon []byte) {
	if d.n > 0 {
		d.h.Write([]byte{','})
	}
	d.h.Write(canon)
	d.n++
}

func (d *digester) sumArray() (sum [sha256.Size]byte) {
	d.h.Write([]byte{']'})
	d.h.Sum(sum[:0])
	return sum
}

func (d *digester) sum() string {
	s := d.sumArray()
	return DigestPrefix + hex.EncodeToString(s[:])
}

// Digest returns the catalog digest of tools: "sha256:" and the hex SHA-256
// of the RFC 8785 canonical JSON of projection v1, that is the array of the
// tools sorted by name (byte order), each reduced to its name, title,
// description, inputSchema, outputSchema, annotations and execution members
// (absent members omitted, present ones kept whatever their value).
//
// Pass a backend's definitions to get its digest, or a session's exposed
// definitions to get its registry digest. Tools sharing a name are ordered
// by their canonical projection, so the digest never depends on the order
// of tools. Digest fails when a definition is not a JSON object, has no
// string name, or has a projected member that cannot be canonicalized.
func Digest(tools []json.RawMessage) (string, error) {
	type item struct {
		name  string
		canon []byte
	}
	items := make([]item, 0, len(tools))
	for i, raw := range tools {
		obj, err := parseObject(raw)
		if err != nil {
			return "", fmt.Errorf("digest: tool %d: %w", i, err)
		}
		p, err := project(obj)
		if err != nil {
			return "", fmt.Errorf("digest: tool %d: %w", i, err)
		}
		items = append(items, item{name: p.name, canon: p.appendCanonical(nil, p.name)})
	}
	slices.SortFunc(items, func(a, b item) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return bytes.Compare(a.canon, b.canon)
	})
	d := newDigester()
	for _, it := range items {
		d.add(it.canon)
	}
	return d.sum(), nil
}
