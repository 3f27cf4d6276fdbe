package suite

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Bounds on a baseline file.
const (
	MaxBaselineBytes = 64 << 10
	MaxBaselineLines = 1000
)

// ErrBadBaseline is wrapped by every ParseBaseline error.
var ErrBadBaseline = errors.New("bad expected-failures file")

// Baseline maps a scenario known to fail through the gateway to the
// one-line reason it fails.
type Baseline map[string]string

// ParseBaseline reads an expected-failures file: one scenario a line, its
// name, white space, and the reason it fails (required); blank lines and
// lines starting with # are ignored. Names are unique.
func ParseBaseline(b []byte) (Baseline, error) {
	if len(b) > MaxBaselineBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrBadBaseline, len(b), MaxBaselineBytes)
	}
	out := Baseline{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), MaxBaselineBytes)
	for n := 1; sc.Scan(); n++ {
		if n > MaxBaselineLines {
			return nil, fmt.Errorf("%w: more than %d lines", ErrBadBaseline, MaxBaselineLines)
		}
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, reason, _ := strings.Cut(strings.Join(strings.Fields(line), " "), " ")
		switch {
		case !scenarioName.MatchString(name):
			return nil, fmt.Errorf("%w: line %d: scenario name %q", ErrBadBaseline, n, clip(name))
		case reason == "":
			return nil, fmt.Errorf("%w: line %d: %s has no reason", ErrBadBaseline, n, name)
		case out[name] != "":
			return nil, fmt.Errorf("%w: line %d: %s listed twice", ErrBadBaseline, n, name)
		}
		out[name] = clip(reason)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadBaseline, err)
	}
	return out, nil
}

// Verdict compares the runs of each scenario directly and through the
// gateway with a baseline.
type Verdict struct {
	// DirectFailures failed against the backend itself: the harness or
	// the backend is broken, whatever the gateway does.
	DirectFailures []string
	// Unexpected passed directly and failed through the gateway without
	// being listed (or with Require set).
	Unexpected []string
	// Expected failed through the gateway and are listed.
	Expected []string
	// NowPassing are listed and passed through the gateway: take them
	// off the list.
	NowPassing []string
	// Unknown are listed but were not run (renamed, or not in this suite).
	Unknown []string
}

// OK reports whether the run is acceptable: every scenario passed
// directly, and each that fails through the gateway is listed.
func (v *Verdict) OK() bool { return len(v.DirectFailures) == 0 && len(v.Unexpected) == 0 }

// GatewayOK reports whether each scenario that passes directly and fails
// through the gateway is listed (a scenario the server itself fails is
// not held against the gateway).
func (v *Verdict) GatewayOK() bool { return len(v.Unexpected) == 0 }

// Judge builds the verdict over scenarios (in their order) from the
// direct and gateway results. With require, the baseline is ignored:
// every scenario that passes directly must pass through the gateway. A
// scenario missing from a result map counts as failed there.
func Judge(scenarios []string, direct, gateway map[string]*Result, base Baseline, require bool) *Verdict {
	v := &Verdict{}
	ran := map[string]bool{}
	for _, s := range scenarios {
		ran[s] = true
		d, g := direct[s], gateway[s]
		_, listed := base[s]
		dOK, gOK := d != nil && d.Passed(), g != nil && g.Passed()
		switch {
		case !dOK:
			v.DirectFailures = append(v.DirectFailures, s)
		case !gOK && listed && !require:
			v.Expected = append(v.Expected, s)
		case !gOK:
			v.Unexpected = append(v.Unexpected, s)
		}
		if listed && gOK {
			v.NowPassing = append(v.NowPassing, s)
		}
	}
	for s := range base {
		if !ran[s] {
			v.Unknown = append(v.Unknown, s)
		}
	}
	slices.Sort(v.Unknown)
	return v
}

// sectionLine is a section header of an expected-failures file: "[set
// server]", e.g. "[2026-07-28 go-sdk]".
var sectionLine = regexp.MustCompile(`^\[([a-z0-9][a-z0-9._-]{0,49}) ([a-z0-9][a-z0-9._-]{0,49})\]$`)

// SectionKey is the key of ParseBaselines's map for requirement set (or
// suite) set and server.
func SectionKey(set, server string) string { return set + " " + server }

// ParseBaselines reads an expected-failures file in sections: a line
// "[SET SERVER]" starts the section of requirement set (or suite) SET
// against SERVER, and the lines up to the next header are a baseline as
// ParseBaseline reads it. Lines before the first header are the section
// "" (the file of one suite and server). A section appears once.
func ParseBaselines(b []byte) (map[string]Baseline, error) {
	if len(b) > MaxBaselineBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrBadBaseline, len(b), MaxBaselineBytes)
	}
	chunks := map[string]*bytes.Buffer{"": {}}
	order := []string{""}
	key := ""
	for n, line := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "[") {
			chunks[key].WriteString(line + "\n")
			continue
		}
		m := sectionLine.FindStringSubmatch(t)
		if m == nil {
			return nil, fmt.Errorf("%w: line %d: section header %q: want [SET SERVER]", ErrBadBaseline, n+1, clip(t))
		}
		key = SectionKey(m[1], m[2])
		if chunks[key] != nil {
			return nil, fmt.Errorf("%w: line %d: section [%s] twice", ErrBadBaseline, n+1, key)
		}
		chunks[key] = &bytes.Buffer{}
		order = append(order, key)
	}
	out := map[string]Baseline{}
	for _, k := range order {
		base, err := ParseBaseline(chunks[k].Bytes())
		if err != nil {
			return nil, fmt.Errorf("section [%s]: %w", k, err)
		}
		out[k] = base
	}
	return out, nil
}
