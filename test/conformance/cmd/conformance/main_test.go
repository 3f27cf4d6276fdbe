package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/test/conformance/suite"
)

func TestParse(t *testing.T) {
	env := func(k string) string {
		if k == "CONFORMANCE_REQUIRE" {
			return "1"
		}
		return ""
	}
	o, err := parse([]string{"-script", "x.js"}, env)
	if err != nil || !o.require || o.naming != namingAuto || o.suiteName != "active" ||
		o.requirements != "2025-11-25,2026-07-28" || o.servers != "fleetgate,go-sdk" {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	for _, bad := range [][]string{
		{},
		{"-script", "x", "-suite", "core2"},
		{"-script", "x", "-naming", "manual"},
		{"-script", "x", "-parallel", "0"},
		{"-script", "x", "-timeout", "0s"},
		{"-script", "x", "-requirements", "latest"},
		{"-script", "x", "-servers", "fleetgate,nginx"},
	} {
		if _, err := parse(bad, func(string) string { return "" }); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// The fleet config the harness writes loads, and the naming it picks is
// one this build's config accepts.
func TestFleetConfigAndNaming(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(path, []byte(fleetYAML("http://127.0.0.1:1/mcp", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(path); err != nil {
		t.Fatalf("prefix config: %v", err)
	}
	naming, why, err := chooseNaming(namingAuto, dir)
	if err != nil {
		t.Fatal(err)
	}
	switch naming {
	case namingPriority:
		if why != "" {
			t.Fatalf("priority with a reason %q", why)
		}
	case namingPrefix:
		if !strings.Contains(why, "conflicts") {
			t.Fatalf("prefix fallback for another reason: %s", why)
		}
	default:
		t.Fatalf("naming %q", naming)
	}
	if n, _, _ := chooseNaming(namingPrefix, dir); n != namingPrefix {
		t.Fatalf("an explicit prefix became %q", n)
	}
}

func TestReport(t *testing.T) {
	pass := &suite.Result{Checks: []suite.Check{{Status: suite.StatusSuccess}}}
	fail := &suite.Result{Checks: []suite.Check{{Name: "Logs", Status: suite.StatusFailure, ErrorMessage: "none | zero", Details: `{"n":0}`}}}
	names := []string{"ping", "tools-call-with-logging"}
	direct := map[string]*suite.Result{"ping": pass, "tools-call-with-logging": pass}
	edge := map[string]*suite.Result{"ping": pass, "tools-call-with-logging": fail}
	r := &report{names: names, direct: direct, edge: edge, naming: namingPrefix, details: true, took: time.Second,
		verdict: suite.Judge(names, direct, edge, suite.Baseline{}, false)}
	var text, md strings.Builder
	r.text(&text)
	r.markdownTable(&md)
	for _, want := range []string{"direct 2/2, through the edge 1/2", "FAIL: pass directly but fail through the edge", `details: {"n":0}`} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if !strings.Contains(md.String(), "| `tools-call-with-logging` | pass | FAIL | Logs: none \\| zero |") {
		t.Errorf("markdown:\n%s", md.String())
	}
}
