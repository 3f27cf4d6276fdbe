package health

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseStatus(t *testing.T) {
	for _, s := range []string{"healthy", "degraded", "unhealthy", "unknown", "unauthenticated"} {
		got, err := ParseStatus(s)
		if err != nil || string(got) != s {
			t.Errorf("ParseStatus(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Healthy", " healthy", "ok", "down"} {
		got, err := ParseStatus(s)
		if err == nil || got != "" {
			t.Errorf("ParseStatus(%q) = %q, %v; want an error", s, got, err)
			continue
		}
		if !errors.Is(err, ErrInvalidStatus) {
			t.Errorf("ParseStatus(%q): %v does not wrap ErrInvalidStatus", s, err)
		}
		if !strings.Contains(err.Error(), `"`+s+`"`) {
			t.Errorf("ParseStatus(%q): error %q does not quote the input", s, err)
		}
	}
}

func TestAdvertisable(t *testing.T) {
	tests := []struct {
		s    Status
		want bool
	}{
		{Healthy, true},
		{Degraded, true},
		{Unhealthy, false},
		{Unknown, false},
		{Unauthenticated, false},
		{"", false},
		{"HEALTHY", false},
	}
	for _, tc := range tests {
		if got := Advertisable(tc.s); got != tc.want {
			t.Errorf("Advertisable(%q) = %v, want %v", tc.s, got, tc.want)
		}
	}
}

func TestStatuses(t *testing.T) {
	got := Statuses()
	want := []Status{Healthy, Degraded, Unknown, Unhealthy, Unauthenticated}
	if !slices.Equal(got, want) {
		t.Fatalf("Statuses() = %v, want %v", got, want)
	}
	got[0] = "mutated"
	if Statuses()[0] != Healthy {
		t.Error("Statuses returned shared storage")
	}
	for _, s := range want {
		if p, err := ParseStatus(string(s)); err != nil || p != s {
			t.Errorf("round trip %q: %q, %v", s, p, err)
		}
	}
}
