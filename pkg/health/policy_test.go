package health

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestPolicyWithDefaults(t *testing.T) {
	tests := []struct {
		name string
		in   *Policy
		want Policy
	}{
		{"nil", nil, Policy{5 * time.Second, 2 * time.Second, 2, 5 * time.Second}},
		{"zero", &Policy{}, Policy{5 * time.Second, 2 * time.Second, 2, 5 * time.Second}},
		{"debounce follows interval", &Policy{Interval: time.Second}, Policy{time.Second, 2 * time.Second, 2, time.Second}},
		{"all set", &Policy{3 * time.Second, time.Second, 4, 7 * time.Second}, Policy{3 * time.Second, time.Second, 4, 7 * time.Second}},
		{"partial", &Policy{Timeout: 500 * time.Millisecond, UnhealthyAfter: 1}, Policy{5 * time.Second, 500 * time.Millisecond, 1, 5 * time.Second}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.in.WithDefaults(); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			got, err := tc.in.Resolve()
			if err != nil || got != tc.want {
				t.Errorf("Resolve: %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	tests := []struct {
		in    Policy
		field string // "" = valid
	}{
		{Policy{}, ""},
		{Policy{Interval: time.Second, Timeout: 3 * time.Second}, ""}, // timeout above interval is allowed
		{Policy{Interval: -time.Second}, "interval"},
		{Policy{Timeout: -1}, "timeout"},
		{Policy{UnhealthyAfter: -2}, "unhealthy_after"},
		{Policy{Debounce: -time.Millisecond}, "debounce"},
		{Policy{Interval: -1, UnhealthyAfter: -1}, "interval"}, // first bad field wins
	}
	for _, tc := range tests {
		err := tc.in.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("Validate(%+v) = %v, want nil", tc.in, err)
			}
			continue
		}
		var pe *PolicyError
		if !errors.As(err, &pe) || pe.Field != tc.field {
			t.Errorf("Validate(%+v) = %v, want a *PolicyError for %q", tc.in, err, tc.field)
			continue
		}
		if !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("Validate(%+v) = %v: not ErrInvalidPolicy", tc.in, err)
		}
		if !strings.Contains(err.Error(), tc.field+":") {
			t.Errorf("error %q does not name %q", err, tc.field)
		}
		if _, rerr := tc.in.Resolve(); !errors.Is(rerr, ErrInvalidPolicy) {
			t.Errorf("Resolve(%+v) = %v, want the validation error", tc.in, rerr)
		}
	}
	var nilPolicy *Policy
	if err := nilPolicy.Validate(); err != nil {
		t.Errorf("nil policy: %v", err)
	}
}
