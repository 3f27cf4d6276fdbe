package verify

import (
	"bytes"
	"encoding/json"
	"net"
	"strings"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/convergence"
	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

func TestMainCommand(t *testing.T) {
	b := startBackend(t, &demobackend.Options{ExtraTools: 250, PageSize: 100})
	want, _ := sdkDigest(t, b.URL())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/mcp"
	ln.Close()

	for _, tc := range []struct {
		name    string
		args    []string
		exit    int
		verdict convergence.Status // "" when no report is expected
		stderr  string             // substring of stderr; "" means empty stderr
	}{
		{"converged", []string{"--url", b.URL(), "--expect-digest", want}, ExitConverged, convergence.Converged, ""},
		{"stale", []string{"--url", b.URL(), "--expect-digest", "sha256:00"}, ExitStale, convergence.Stale, "stale: served digest"},
		{"unverifiable", []string{"--url", b.URL(), "--timeout", "10s"}, ExitUnverifiable, convergence.Unverifiable, "unverifiable: current digest unknown"},
		{"controller", []string{"--url", b.URL(), "--controller", fakeController(t, "g1", 3, want), "--group", "g1"}, ExitConverged, convergence.Converged, ""},
		{"header", []string{"--url", b.URL(), "--header", "X-Trace: 1", "--expect-digest", want}, ExitConverged, convergence.Converged, ""},
		{"unreachable", []string{"--url", dead}, ExitError, "", dead},
		{"missing url", nil, ExitError, "", "url: invalid options: required"},
		{"bad flag", []string{"--url", b.URL(), "--bogus"}, ExitError, "", "flag provided but not defined: -bogus"},
		{"bad header", []string{"--url", b.URL(), "--header", "nocolon"}, ExitError, "", `header: want "Name: value"`},
		{"bad timeout", []string{"--url", b.URL(), "--timeout", "0s"}, ExitError, "", "-timeout"},
		{"positional", []string{"--url", b.URL(), "extra"}, ExitError, "", `unexpected argument "extra"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(tc.args, &stdout, &stderr); code != tc.exit {
				t.Errorf("exit %d, want %d; stderr %q", code, tc.exit, stderr.String())
			}
			if (tc.stderr == "") != (stderr.Len() == 0) || !strings.Contains(stderr.String(), tc.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.stderr)
			}
			if strings.Count(strings.TrimSpace(stderr.String()), "\n") > 0 {
				t.Errorf("stderr has more than one line: %q", stderr.String())
			}
			if tc.verdict == "" {
				if stdout.Len() != 0 {
					t.Errorf("stdout %q, want nothing", stdout.String())
				}
				return
			}
			var rep map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
			}
			for _, k := range []string{"url", "protocol_version", "list_changed", "pages", "cursors", "tools", "digest", "verdict", "reason"} {
				if _, ok := rep[k]; !ok {
					t.Errorf("report lacks %q", k)
				}
			}
			if rep["verdict"] != string(tc.verdict) || rep["pages"] != 3.0 || rep["digest"] != want {
				t.Errorf("verdict %v pages %v digest %v", rep["verdict"], rep["pages"], rep["digest"])
			}
		})
	}
}
