package main

import (
	"io/fs"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestFindBudget(t *testing.T) {
	files := func(m map[string]string) func(string) ([]byte, error) {
		return func(name string) ([]byte, error) {
			if v, ok := m[name]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		}
	}
	v2, v1 := cgroupLimitFiles[0], cgroupLimitFiles[1]
	for _, tc := range []struct {
		name            string
		flagged, goLim  int64
		files           map[string]string
		want            int64
		from, errSubstr string
	}{
		{"flag wins", 1 << 30, 2 << 30, map[string]string{v2: "4294967296\n"}, 1 << 30, "flag", ""},
		{"GOMEMLIMIT", 0, 2 << 30, map[string]string{v2: "4294967296\n"}, 2 << 30, "GOMEMLIMIT", ""},
		{"cgroup v2", 0, math.MaxInt64, map[string]string{v2: "1073741824\n"}, 1 << 30, v2, ""},
		{"cgroup v2 unlimited", 0, math.MaxInt64, map[string]string{v2: "max\n"}, 0, "", ""},
		{"cgroup v1", 0, math.MaxInt64, map[string]string{v1: "536870912\n"}, 512 << 20, v1, ""},
		{"cgroup v1 unlimited", 0, math.MaxInt64, map[string]string{v1: "9223372036854771712\n"}, 0, "", ""},
		{"none", 0, math.MaxInt64, nil, 0, "", ""},
		{"garbage", 0, math.MaxInt64, map[string]string{v2: "lots"}, 0, "", "not a limit"},
		{"huge file", 0, math.MaxInt64, map[string]string{v2: strings.Repeat("9", 100)}, 0, "", "not a limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := findBudget(tc.flagged, tc.goLim, files(tc.files))
			if tc.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
					t.Fatalf("err %v, want %q", err, tc.errSubstr)
				}
				return
			}
			if err != nil || got.bytes != tc.want || got.from != tc.from {
				t.Fatalf("%+v %v, want %d from %q", got, err, tc.want, tc.from)
			}
		})
	}
}

// The default session cap is derived from the budget; an explicit one
// over a budget given by flag is refused naming both, over one found it
// is kept with a warning.
func TestSessionCapFromBudget(t *testing.T) {
	found := func(b budgetSource) func(int64) (budgetSource, error) {
		return func(flagged int64) (budgetSource, error) {
			if flagged > 0 {
				return budgetSource{flagged, "flag"}, nil
			}
			return b, nil
		}
	}
	for _, tc := range []struct {
		name      string
		max       int
		flagged   int64
		found     budgetSource
		want      int
		errSubstr string
		warn      bool
	}{
		{"derived from the chart's 1GiB", 0, 1 << 30, budgetSource{}, 1436, "", false},
		{"derived from the cgroup", 0, 0, budgetSource{1 << 30, "/sys/fs/cgroup/memory.max"}, 1436, "", false},
		{"no budget", 0, 0, budgetSource{}, 10000, "", false},
		{"explicit over a flagged budget", 10000, 1 << 30, budgetSource{}, 0, "at most 1436 fit", false},
		{"explicit over a found budget", 10000, 0, budgetSource{1 << 30, "GOMEMLIMIT"}, 10000, "", true},
		{"explicit within", 1000, 1 << 30, budgetSource{}, 1000, "", false},
		{"no cap", -1, 1 << 30, budgetSource{}, -1, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &limitConfig{maxSessions: tc.max, maxInitialize: 64 << 10}
			c.memoryBudget.Set(strconv.FormatInt(tc.flagged, 10))
			err := c.checkBudget(found(tc.found))
			if tc.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) || !strings.Contains(err.Error(), "-max-sessions") {
					t.Fatalf("err %v, want %q", err, tc.errSubstr)
				}
				return
			}
			if err != nil || c.maxSessions != tc.want {
				t.Fatalf("cap %d, %v; want %d", c.maxSessions, err, tc.want)
			}
			if warned := len(c.notes) > 0 && strings.HasPrefix(c.notes[0], "-max-sessions"); warned != tc.warn {
				t.Fatalf("notes %q, warning wanted: %v", c.notes, tc.warn)
			}
		})
	}
}
