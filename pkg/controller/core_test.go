package controller

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/health"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// Scenario files drive a Core line by line:
//
//	<offset> desire group/name=url ...      replace the desired membership
//	<offset> observe group/name ok|fail|auth [latency]
//	<offset> catalog group/name <digest>
//	<offset> tick
//	<offset> ready <event> ...              Ready must return exactly these
//	<offset> restart                        new Core from the log state so far
//
// Events are written kind:group/name[:detail]: added, removed,
// catalog:<digest>, health:<status>:<advertisable>.
func TestCoreScenarios(t *testing.T) {
	files, _ := filepath.Glob("testdata/core/*.scn")
	if len(files) == 0 {
		t.Fatal("no scenarios")
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".scn"), func(t *testing.T) { runCoreScenario(t, f) })
	}
}

func runCoreScenario(t *testing.T, path string) {
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	policy := health.Policy{Interval: time.Second, Timeout: 500 * time.Millisecond, UnhealthyAfter: 2, Debounce: 5 * time.Second}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	logState := events.NewState()
	core := NewCore(policy, nil)
	var desired map[BackendKey]events.BackendConfig
	sc := bufio.NewScanner(fh)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		off, err := time.ParseDuration(fields[0])
		if err != nil {
			t.Fatalf("%s:%d: offset: %v", path, n, err)
		}
		now := base.Add(off)
		switch cmd, args := fields[1], fields[2:]; cmd {
		case "desire":
			desired = map[BackendKey]events.BackendConfig{}
			for _, a := range args {
				k, url, _ := strings.Cut(a, "=")
				desired[key(k)] = events.BackendConfig{URL: url, Transport: "streamable-http"}
			}
			core.SetDesired(desired)
		case "observe":
			o := health.Observation{At: now, Result: map[string]health.Result{"ok": health.OK, "fail": health.Failure, "auth": health.AuthFailure}[args[1]], Reason: args[1]}
			if len(args) > 2 {
				o.Latency, _ = time.ParseDuration(args[2])
			}
			core.Observe(key(args[0]), o)
		case "catalog":
			core.Catalog(key(args[0]), Discovered{Digest: args[1], Tools: []json.RawMessage{json.RawMessage(`{"name":"t","inputSchema":{"type":"object"}}`)}}, now)
		case "tick":
			core.Tick(now)
		case "ready":
			evs := core.Ready(now)
			var got []string
			for _, ev := range evs {
				got = append(got, describe(ev))
				ev.Generation = logState.Generation + 1
				if logState, err = events.Apply(logState, ev); err != nil {
					t.Fatalf("%s:%d: event does not apply: %v", path, n, err)
				}
			}
			if g, w := strings.Join(got, " "), strings.Join(args, " "); g != w {
				t.Fatalf("%s:%d: ready = [%s], want [%s]", path, n, g, w)
			}
		case "restart":
			core = NewCore(policy, logState)
			core.SetDesired(desired)
		default:
			t.Fatalf("%s:%d: unknown command %q", path, n, cmd)
		}
	}
}

func key(s string) BackendKey {
	g, n, _ := strings.Cut(s, "/")
	return BackendKey{g, n}
}

func describe(ev *eventspb.Event) string {
	k := ev.Group + "/" + ev.Backend
	switch x := ev.Kind.(type) {
	case *eventspb.Event_BackendAdded:
		return "added:" + k
	case *eventspb.Event_BackendRemoved:
		return "removed:" + k
	case *eventspb.Event_CatalogChanged:
		return "catalog:" + k + ":" + x.CatalogChanged.Digest
	case *eventspb.Event_HealthChanged:
		return fmt.Sprintf("health:%s:%s:%v", k, x.HealthChanged.To, x.HealthChanged.Advertisable)
	}
	return "?"
}
