package config

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/pkg/naming"
)

func TestLoadDemoFleet(t *testing.T) {
	f, err := Load(filepath.Join("testdata", "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &Fleet{
		Groups: []Group{{Name: "default", Backends: []Backend{
			{Name: "alpha", URL: "http://127.0.0.1:9101/mcp", Transport: TransportStreamableHTTP},
			{Name: "beta", URL: "http://127.0.0.1:9102/mcp", Transport: TransportStreamableHTTP},
		}}},
		Health:      health.Policy{Interval: 5 * time.Second, Timeout: 2 * time.Second, UnhealthyAfter: 2, Debounce: 5 * time.Second},
		Aggregation: Aggregation{Separator: "_", Conflicts: naming.Prefix},
	}
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("Load:\n got %+v\nwant %+v", f, want)
	}
}

func TestParseDefaults(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       *Fleet
	}{
		{"minimal", "groups:\n  - name: default\n    backends:\n      - {name: a1, url: 'https://x.example/mcp', transport: sse}\n",
			&Fleet{
				Groups:      []Group{{Name: "default", Backends: []Backend{{Name: "a1", URL: "https://x.example/mcp", Transport: TransportSSE}}}},
				Health:      health.Policy{Interval: 5 * time.Second, Timeout: 2 * time.Second, UnhealthyAfter: 2, Debounce: 5 * time.Second},
				Aggregation: Aggregation{Separator: "_", Conflicts: naming.Prefix},
			}},
		{"debounce follows interval; nulls are defaults", "groups:\nhealth:\n  interval: 1m\n  timeout:\naggregation:\n  separator: __\n",
			&Fleet{
				Health:      health.Policy{Interval: time.Minute, Timeout: 2 * time.Second, UnhealthyAfter: 2, Debounce: time.Minute},
				Aggregation: Aggregation{Separator: "__", Conflicts: naming.Prefix},
			}},
		{"pinned tools and anchors", "groups:\n  - name: g1\n    pinned_tools: [alpha_echo, beta.search]\n    backends:\n      - &b {name: alpha, url: 'http://h:1/mcp'}\n  - name: g2\n",
			&Fleet{
				Groups: []Group{
					{Name: "g1", PinnedTools: []string{"alpha_echo", "beta.search"}, Backends: []Backend{{Name: "alpha", URL: "http://h:1/mcp", Transport: TransportStreamableHTTP}}},
					{Name: "g2"},
				},
				Health:      (&health.Policy{}).WithDefaults(),
				Aggregation: Aggregation{Separator: "_", Conflicts: naming.Prefix},
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse("t.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// want is the expectation a bad config declares in its leading comments.
type want struct {
	line  int
	field string
	msg   string
}

func readWant(t *testing.T, data []byte) want {
	t.Helper()
	var w want
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "want-line":
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("bad want-line %q", v)
			}
			w.line = n
		case "want-field":
			w.field = v
		case "want-msg":
			w.msg = v
		}
	}
	if w.line == 0 {
		t.Fatal("testdata file declares no want-line")
	}
	return w
}

// TestParseBadConfigs parses every file in testdata/bad and checks that the
// one error names the line and field the file declares.
func TestParseBadConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil || len(files) < 10 {
		t.Fatalf("testdata/bad: %d files, %v", len(files), err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			w := readWant(t, data)
			f, err := Parse("config.yaml", data)
			if err == nil {
				t.Fatalf("parsed to %+v, want an error", f)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v (%T) is not a *FieldError matching ErrInvalidConfig", err, err)
			}
			if fe.File != "config.yaml" || fe.Line != w.line || fe.Field != w.field {
				t.Fatalf("error %q: at %s:%d field %q, want config.yaml:%d field %q", err, fe.File, fe.Line, fe.Field, w.line, w.field)
			}
			text := err.Error()
			if strings.Contains(text, "\n") {
				t.Errorf("error is not one line: %q", text)
			}
			prefix := "config.yaml:" + strconv.Itoa(w.line) + ": "
			if w.field != "" {
				prefix += w.field + ": "
			}
			if !strings.HasPrefix(text, prefix) {
				t.Errorf("error %q does not start with %q", text, prefix)
			}
			if w.msg != "" && fe.Msg != w.msg {
				t.Errorf("message %q, want %q", fe.Msg, w.msg)
			}
			t.Log(text)
		})
	}
}

func TestParseErrorCauses(t *testing.T) {
	_, err := Parse("c.yaml", []byte("health:\n  unhealthy_after: -3\n"))
	if !errors.Is(err, health.ErrInvalidPolicy) {
		t.Errorf("negative unhealthy_after: %v does not match health.ErrInvalidPolicy", err)
	}
	_, err = Parse("c.yaml", []byte("health:\n  interval: soon\n"))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Err == nil {
		t.Errorf("bad duration: %v carries no cause", err)
	}
	_, err = Parse("c.yaml", nil)
	if !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("empty config: %v, want ErrInvalidConfig", err)
	}
	if _, err := Load(filepath.Join("testdata", "missing.yaml")); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrInvalidConfig) {
		t.Errorf("missing file: %v, want os.ErrNotExist only", err)
	}
}

// A config over MaxSize is refused before it is parsed, and the search
// for a syntax error's line gives up past maxProblemBytes of rescanned
// prefixes (a 40 KB file of 2,000 lines took 4.6 s without the bound).
func TestParseBounded(t *testing.T) {
	_, err := Parse("big.yaml", []byte("groups: []\n"+strings.Repeat("#", MaxSize)))
	var fe *FieldError
	if !errors.As(err, &fe) || !strings.Contains(fe.Msg, "limit") {
		t.Fatalf("a config over MaxSize: %v", err)
	}
	var b strings.Builder
	b.WriteString("groups:\n  - name: a\n    pinned_tools:\n")
	for range 1990 {
		b.WriteString("      - t" + strings.Repeat("x", 100) + "\n")
	}
	b.WriteString("     - bad\n")
	data := []byte(b.String())
	if line := problemLine(data, 1, "did not find expected key"); line != 0 {
		t.Fatalf("problemLine scanned %d lines of %d bytes: past its bound", line, len(data))
	}
	_, err = Parse("slow.yaml", data)
	if !errors.As(err, &fe) || fe.Line != 1 {
		t.Fatalf("syntax error: %v, want the line YAML reports (1)", err)
	}
	// Within the bound, the line is still found.
	small := []byte("groups:\n  - name: a\n    pinned_tools:\n      - t\n     - bad\n")
	if line := problemLine(small, 1, "did not find expected key"); line != 5 {
		t.Fatalf("small: line %d, want 5", line)
	}
}
