package cmdline

import "testing"

func TestParseByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want ByteSize
		ok   bool
	}{
		{"0", 0, true},
		{"1024", 1024, true},
		{"256MiB", 256 << 20, true},
		{"1GiB", 1 << 30, true},
		{"1 GiB", 1 << 30, true},
		{"5MB", 5e6, true},
		{"7B", 7, true},
		{"-1", 0, false},
		{"1.5GiB", 0, false},
		{"GiB", 0, false},
		{"", 0, false},
		{"9223372036854775807TiB", 0, false},
		{"100000000000000000000000000000000000", 0, false},
	} {
		got, err := ParseByteSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	for _, v := range []ByteSize{0, 1 << 30, 256 << 20, 1000} {
		back, err := ParseByteSize(v.String())
		if err != nil || back != v {
			t.Errorf("round trip of %d via %q = %d, %v", v, v.String(), back, err)
		}
	}
}

func FuzzParseByteSize(f *testing.F) {
	for _, s := range []string{"0", "256MiB", "1GiB", "-1", "1.5GB", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseByteSize(s)
		if err != nil {
			return
		}
		if v < 0 {
			t.Fatalf("%q parsed to negative %d", s, v)
		}
		if back, err := ParseByteSize(v.String()); err != nil || back != v {
			t.Fatalf("%q: %d does not round-trip via %q: %d, %v", s, v, v.String(), back, err)
		}
	})
}
