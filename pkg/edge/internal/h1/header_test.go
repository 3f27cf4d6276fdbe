package h1

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestFormatHeader(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    http.Header
		want string
		err  bool
	}{
		{"empty", nil, "", false},
		{"sorted and canonical", http.Header{"x-b": {"2"}, "Mcp-Protocol-Version": {"2025-11-25"}},
			"Mcp-Protocol-Version: 2025-11-25\r\nX-B: 2\r\n", false},
		{"two values", http.Header{"X-A": {"1", "2"}}, "X-A: 1\r\nX-A: 2\r\n", false},
		{"name not a token", http.Header{"X A": {"1"}}, "", true},
		{"empty name", http.Header{"": {"1"}}, "", true},
		{"CRLF in value", http.Header{"Authorization": {"Bearer s3cret\r\nX-Evil: 1"}}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := FormatHeader(tc.h)
			if tc.err {
				if !errors.Is(err, ErrBadHeader) {
					t.Fatalf("error %v, want ErrBadHeader", err)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("error text %q carries the value", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("FormatHeader = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
