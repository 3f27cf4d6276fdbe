package cmdline

import (
	"fmt"
	"strconv"
	"strings"
)

// ByteSize is a flag.Value of a size in bytes, written as a whole number
// with an optional unit: B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB,
// GB, TB (powers of 1000), e.g. "256MiB" or "1GiB".
type ByteSize int64

// maxByteSizeText bounds the text a ByteSize parses.
const maxByteSizeText = 32

var byteUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseByteSize parses s as a ByteSize; it refuses negative values,
// fractions and values that overflow int64.
func ParseByteSize(s string) (ByteSize, error) {
	if len(s) > maxByteSizeText {
		return 0, fmt.Errorf("size of %d characters: want at most %d", len(s), maxByteSizeText)
	}
	t := strings.TrimSpace(s)
	factor := int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, factor = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.factor
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a whole number of bytes with an optional unit (KiB, MiB, GiB, KB, MB, GB)", s)
	}
	if n > (1<<63-1)/factor {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return ByteSize(n * factor), nil
}

// String writes the size with the largest binary unit that divides it.
func (b *ByteSize) String() string {
	if b == nil {
		return "0"
	}
	v := int64(*b)
	for _, u := range []struct {
		suffix string
		factor int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v != 0 && v%u.factor == 0 {
			return strconv.FormatInt(v/u.factor, 10) + u.suffix
		}
	}
	return strconv.FormatInt(v, 10)
}

// Set parses s (flag.Value).
func (b *ByteSize) Set(s string) error {
	v, err := ParseByteSize(s)
	if err != nil {
		return err
	}
	*b = v
	return nil
}
