package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/demobackend"
)

// BenchmarkBackendCloseToEvent: time from a backend's HTTP server closing
// (listener and connections) to the unadvertise event applied by a reader
// of the stream, with an in-process controller; reports p50 and p99.
func BenchmarkBackendCloseToEvent(b *testing.B) {
	node := startNATS(b)
	alpha := startBackend(b, "alpha", nil)
	debounce := 50 * time.Millisecond
	startController(b, node.ClientURL(), "c1", fleetYAML(time.Second, debounce, alpha))
	el := followLog(b, node.ClientURL())
	i, _, _ := el.waitEvent(b, 0, 20*time.Second, "alpha advertised", healthOf("alpha", true))
	var lat []time.Duration
	b.ResetTimer()
	for range b.N {
		time.Sleep(2 * debounce) // let the coalescing window close: measure the leading edge
		killed := time.Now()
		alpha.Stop()
		j, _, at := el.waitEvent(b, i+1, 20*time.Second, "alpha unadvertised", healthOf("alpha", false))
		lat = append(lat, at.Sub(killed))
		b.StopTimer()
		if err := alpha.Restart(); err != nil {
			b.Fatal(err)
		}
		i, _, _ = el.waitEvent(b, j+1, 20*time.Second, "alpha advertised", healthOf("alpha", true))
		b.StartTimer()
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkController200Backends runs the controller binary against 200
// demo backends probed every second for ten seconds and reports its CPU
// time per probe and its resident memory (from /proc).
func BenchmarkController200Backends(b *testing.B) {
	node := startNATS(b)
	var backends []*demobackend.Backend
	for i := range 200 {
		backends = append(backends, startBackend(b, fmt.Sprintf("b%03d", i), nil))
	}
	cfg := filepath.Join(b.TempDir(), "fleet.yaml")
	if err := os.WriteFile(cfg, []byte(fleetYAML(time.Second, time.Second, backends...)), 0o644); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		p := startControllerProc(b, node.ClientURL(), "bench", cfg)
		el := followLog(b, node.ClientURL())
		eventually(b, 60*time.Second, "all 200 advertised", func() bool {
			s := el.r.State().Group("default")
			if s == nil || len(s.Backends) != 200 {
				return false
			}
			for _, be := range s.Backends {
				if !be.Advertisable {
					return false
				}
			}
			return true
		})
		cpu0 := procCPU(b, p.cmd.Process.Pid)
		time.Sleep(10 * time.Second) // steady state: 200 backends x 10 probes
		cpu1 := procCPU(b, p.cmd.Process.Pid)
		b.ReportMetric(float64((cpu1-cpu0).Microseconds())/2000, "cpu-µs/probe")
		b.ReportMetric(float64(procRSS(b, p.cmd.Process.Pid))/(1<<20), "rss-MiB")
	}
}

// procCPU reads a process's user+system CPU time.
func procCPU(b *testing.B, pid int) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ = 100
}

func procRSS(b *testing.B, pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(line)[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
