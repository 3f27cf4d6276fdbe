package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Protocol eras of a catalog. A backend that speaks both protocol
// generations may list different definitions in each: the session-based
// revisions (up to 2025-11-25, one list for all of them) and the
// stateless generation (2026-07-28 and newer).
const (
	EraSession   = "session"
	EraStateless = "stateless"
)

// EraLists are the definitions a backend lists to clients of the
// stateless generation when they differ from what it lists to clients of
// the session-based revisions (the catalog's own lists): each list in
// the backend's order, canonical JSON, and Digest the catalog digest of
// Tools. A backend whose lists are the same in both eras has none.
type EraLists struct {
	Tools             []json.RawMessage `json:"tools"`
	Resources         []json.RawMessage `json:"resources,omitempty"`
	Prompts           []json.RawMessage `json:"prompts,omitempty"`
	ResourceTemplates []json.RawMessage `json:"resource_templates,omitempty"`
	Digest            string            `json:"digest"`
}

// ErrEraDigest is wrapped by EraDigest's errors.
var ErrEraDigest = errors.New("era digest")

// EraDigest is the one catalog digest of a generation whose view differs
// by era: "sha256:" and the hex SHA-256 of the canonical JSON
// {"session":S,"stateless":T}, S and T being the catalog digests (Digest)
// of the tools each era is served. A view that does not differ by era has
// the digest of its one list instead, so that every digest of a catalog
// served alike to all eras is what it always was. A verifier that
// traversed one era's list checks its digest against that era's member
// and the members against the generation's digest.
func EraDigest(session, stateless string) (string, error) {
	for _, d := range []string{session, stateless} {
		if !validDigest(d) {
			return "", fmt.Errorf("%w: %q is not a catalog digest", ErrEraDigest, d)
		}
	}
	// Both digests are "sha256:" and 64 lowercase hex digits: their JSON
	// is themselves quoted, and the object below is canonical as written
	// (members in code point order, no white space).
	sum := sha256.Sum256([]byte(`{"` + EraSession + `":"` + session + `","` + EraStateless + `":"` + stateless + `"}`))
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// validDigest reports whether d is a catalog digest: "sha256:" and 64
// lowercase hex digits.
func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ViewDigest is the digest of a generation whose view is v for the
// session-based revisions and stateless (nil: v too) for the stateless
// generation: v's digest when both eras are served the same tools,
// EraDigest of both otherwise.
func ViewDigest(v, stateless *View) string {
	if stateless == nil || v == nil || stateless.Digest == v.Digest {
		return v.digestOrEmpty()
	}
	d, err := EraDigest(v.Digest, stateless.Digest)
	if err != nil { // a View's digest is always one: not expected
		return v.Digest
	}
	return d
}

func (v *View) digestOrEmpty() string {
	if v == nil {
		return ""
	}
	return v.Digest
}
