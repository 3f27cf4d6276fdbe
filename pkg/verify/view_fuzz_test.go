package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/catalog"
)

const (
	digestA = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestB = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
)

// eraView is a view document served differently by era, its digest d.
func eraView(d string) string {
	return `{"generation":7,"digest":"` + d + `","tools":[],"eras":{"session":{"digest":"` + digestA + `"},"stateless":{"digest":"` + digestB + `","tools":[]}}}`
}

// TestDecodeViewEras: a view whose eras are served different tools is
// verified against its session era's digest once the eras' digests make
// its digest; one whose do not is refused; a view without eras is its
// digest.
func TestDecodeViewEras(t *testing.T) {
	d, err := catalog.EraDigest(digestA, digestB)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := decodeView(strings.NewReader(eraView(d)))
	if err != nil || exp.Digest != digestA || exp.ViewDigest != d || exp.Generation != 7 {
		t.Fatalf("era view: %+v, %v", exp, err)
	}
	if _, err := decodeView(strings.NewReader(eraView(digestA))); !errors.Is(err, ErrEras) {
		t.Fatalf("era view with a digest its eras do not make: %v", err)
	}
	exp, err = decodeView(strings.NewReader(`{"generation":3,"digest":"` + digestA + `","tools":[]}`))
	if err != nil || exp.Digest != digestA || exp.ViewDigest != "" {
		t.Fatalf("view: %+v, %v", exp, err)
	}
}

// FuzzDecodeView: a controller's view document, whatever its bytes,
// never panics the reader; one it takes has a digest, at most maxRegions
// regions, and for a view served differently by era a session digest its
// eras bind to the view's.
func FuzzDecodeView(f *testing.F) {
	d, _ := catalog.EraDigest(digestA, digestB)
	for _, s := range []string{eraView(d), eraView(digestA), `{"digest":"x"}`, `{"digest":"x","eras":{}}`, `{"regions":{"a":1}}`, `[`, `{"eras":null,"digest":"` + d + `"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		exp, err := decodeView(strings.NewReader(string(data)))
		if err != nil {
			return
		}
		if exp.Digest == "" || len(exp.Regions) > maxRegions {
			t.Fatalf("taken: %+v", exp)
		}
		if exp.ViewDigest != "" {
			if _, err := catalog.EraDigest(exp.Digest, digestB); err != nil {
				t.Fatalf("session digest %q taken: %v", exp.Digest, err)
			}
		}
	})
}
