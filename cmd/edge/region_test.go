package main

import (
	"strings"
	"testing"
)

func TestParseRegionFlag(t *testing.T) {
	none := func(string) string { return "" }
	c, err := parse(nil, none)
	if err != nil || c.region != "" {
		t.Fatalf("default: %v, region %q", err, c.region)
	}
	if c, err = parse([]string{"--region", "eu-west"}, none); err != nil || c.region != "eu-west" {
		t.Fatalf("--region eu-west: %v", err)
	}
	for _, bad := range []string{"EU", "eu.west", "-eu", strings.Repeat("x", 33)} {
		if _, err := parse([]string{"--region", bad}, none); err == nil || !strings.Contains(err.Error(), "-region") {
			t.Errorf("--region %q: err = %v", bad, err)
		}
	}
}

func TestParseRegionsFlag(t *testing.T) {
	none := func(string) string { return "" }
	c, err := parse([]string{"--regions", "b,a"}, none)
	if err != nil || strings.Join(c.regions, ",") != "a,b" && strings.Join(c.regions, ",") != "b,a" {
		t.Fatalf("--regions b,a: %v, %v", err, c.regions)
	}
	if _, err := parse([]string{"--regions", "a,B"}, none); err == nil || !strings.Contains(err.Error(), "-regions") {
		t.Errorf("--regions a,B: err = %v", err)
	}
	if _, err := parse([]string{"--regions", "a,b", "--region", "a"}, none); err == nil || !strings.Contains(err.Error(), "-regions") {
		t.Errorf("--region with --regions: err = %v", err)
	}
}
