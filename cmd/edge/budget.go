package main

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// The edge's memory budget (--memory-budget), from which its default
// session cap is derived (admission.SessionsFor). Not given, it is found:
// GOMEMLIMIT when set, else the memory limit of the edge's cgroup (v2
// memory.max, v1 memory.limit_in_bytes), else none (the cap is
// admission.DefaultMaxSessions).

// cgroupLimitFiles are where a container's memory limit is read, v2 first.
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// noLimit is above any real limit: cgroup v1 reports "no limit" as a page
// count near MaxInt64.
const noLimit = 1 << 60

// budgetSource is where a memory budget was found.
type budgetSource struct {
	bytes int64
	from  string // "flag", "GOMEMLIMIT", a cgroup file, or "" for none
}

// findBudget returns the memory budget: flagged (> 0) when given, else
// goMemLimit (debug.SetMemoryLimit(-1)'s value; math.MaxInt64 when unset),
// else the first cgroup limit readFile finds.
func findBudget(flagged, goMemLimit int64, readFile func(string) ([]byte, error)) (budgetSource, error) {
	if flagged > 0 {
		return budgetSource{flagged, "flag"}, nil
	}
	if goMemLimit > 0 && goMemLimit < math.MaxInt64 {
		return budgetSource{goMemLimit, "GOMEMLIMIT"}, nil
	}
	for _, name := range cgroupLimitFiles {
		b, err := readFile(name)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return budgetSource{}, fmt.Errorf("memory budget: read %s: %w", name, err)
		}
		if len(b) > 32 {
			return budgetSource{}, fmt.Errorf("memory budget: %s: %d bytes, not a limit", name, len(b))
		}
		t := strings.TrimSpace(string(b))
		if t == "max" {
			return budgetSource{}, nil
		}
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n <= 0 {
			return budgetSource{}, fmt.Errorf("memory budget: %s holds %q, not a limit in bytes", name, t)
		}
		if n >= noLimit {
			return budgetSource{}, nil
		}
		return budgetSource{n, name}, nil
	}
	return budgetSource{}, nil
}

// detectBudget is findBudget on this process and host.
func detectBudget(flagged int64) (budgetSource, error) {
	return findBudget(flagged, debug.SetMemoryLimit(-1), os.ReadFile)
}
