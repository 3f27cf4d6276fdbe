package region

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestRegionParseVector(t *testing.T) {
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("r" + strings.Repeat("x", i) + "=1")
		}
		return b.String()
	}
	for _, tc := range []struct {
		in   string
		want string // the vector's String; "" with ok for the empty vector
		ok   bool
	}{
		{"", "", true},
		{"  ", "", true},
		{"a=12,b=7", "a=12,b=7", true},
		{"b=7,a=12", "a=12,b=7", true},
		{" us-east = 3 , eu-west=0 ", "eu-west=0,us-east=3", true},
		{"a=18446744073709551615", "a=18446744073709551615", true},
		{"a=007", "a=7", true},
		{many(MaxRegions), "", true},
		{many(MaxRegions + 1), "", false},
		{"a=18446744073709551616", "", false},
		{"a=-1", "", false},
		{"a=+1", "", false},
		{"a=1.5", "", false},
		{"a=", "", false},
		{"a", "", false},
		{"=1", "", false},
		{"A=1", "", false},
		{"-a=1", "", false},
		{"a.b=1", "", false},
		{"a>=1", "", false},
		{"a=1,a=2", "", false},
		{"a=1,", "", false},
		{"a=1=2", "", false},
		{strings.Repeat("x", MaxName+1) + "=1", "", false},
		{"a=" + strings.Repeat("0", maxVectorText), "", false},
	} {
		got, err := ParseVector(tc.in)
		if tc.ok != (err == nil) {
			t.Errorf("ParseVector(%q) = %v, %v; want ok=%v", tc.in, got, err, tc.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrVector) {
				t.Errorf("ParseVector(%q): %v is not ErrVector", tc.in, err)
			}
			continue
		}
		if tc.want != "" && got.String() != tc.want {
			t.Errorf("ParseVector(%q) = %s, want %s", tc.in, got, tc.want)
		}
		if got == nil {
			t.Errorf("ParseVector(%q) returned a nil vector", tc.in)
		}
	}
	// A bad name is also ErrName, so callers can tell it apart.
	if _, err := ParseVector("B=1"); !errors.Is(err, ErrName) {
		t.Errorf("bad name: %v is not ErrName", err)
	}
}

// FuzzParseVector: whatever ParseVector accepts is bounded, names only
// valid regions, and prints in a form it parses back to the same vector.
func FuzzParseVector(f *testing.F) {
	for _, s := range []string{"", "a=12,b=7", "b=7,a=12", " a = 1 ", "a=1,a=2", "a=18446744073709551615",
		"a=18446744073709551616", "A=1", "a=-1", "a", "=", ",", "a=1,", "us-east=3,eu-west=0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVector(s)
		if err != nil {
			if v != nil {
				t.Fatalf("ParseVector(%q) returned %v with error %v", s, v, err)
			}
			return
		}
		if len(v) > MaxRegions {
			t.Fatalf("ParseVector(%q): %d regions", s, len(v))
		}
		for r := range v {
			if CheckName(r) != nil {
				t.Fatalf("ParseVector(%q) accepted region %q", s, r)
			}
		}
		text := v.String()
		back, err := ParseVector(text)
		if err != nil {
			t.Fatalf("ParseVector(%q) = %s, which does not parse back: %v", s, text, err)
		}
		if !maps.Equal(back, v) || back.String() != text {
			t.Fatalf("round trip of %q: %v -> %q -> %v", s, v, text, back)
		}
	})
}
