package region

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrVector is wrapped by errors about a generation vector's text.
var ErrVector = errors.New("region: bad generation vector")

// maxVectorText bounds the text ParseVector reads: MaxRegions entries of
// a name, "=", a uint64 in decimal (20 digits) and a comma, with room for
// the blanks around them.
const maxVectorText = MaxRegions * (MaxName + 1 + 20 + 1 + 8)

// ParseVector parses a generation vector in the form Vector.String prints,
// "a=12,b=7" (a flag value): at most MaxRegions entries, each a region
// name (CheckName) listed once, "=" and a decimal generation; blanks around
// names and generations are ignored, the order is not significant. The
// empty string is the empty vector. ParseVector(v.String()) is v for every
// vector of at most MaxRegions valid names.
func ParseVector(s string) (Vector, error) {
	v := Vector{}
	if strings.TrimSpace(s) == "" {
		return v, nil
	}
	if len(s) > maxVectorText {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrVector, len(s), maxVectorText)
	}
	entries := strings.Split(s, ",")
	if len(entries) > MaxRegions {
		return nil, fmt.Errorf("%w: %d entries, at most %d", ErrVector, len(entries), MaxRegions)
	}
	for i, e := range entries {
		name, gen, ok := strings.Cut(e, "=")
		if !ok {
			return nil, fmt.Errorf("%w: entry %d %q: want region=generation", ErrVector, i+1, e)
		}
		name = strings.TrimSpace(name)
		if err := CheckName(name); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrVector, i+1, err)
		}
		if _, dup := v[name]; dup {
			return nil, fmt.Errorf("%w: region %q given twice", ErrVector, name)
		}
		g, err := strconv.ParseUint(strings.TrimSpace(gen), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: region %s: generation %q: %w", ErrVector, name, gen, err)
		}
		v[name] = g
	}
	return v, nil
}
