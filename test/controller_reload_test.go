package test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/controller"
)

// logSink is a log written by a controller and read by a test.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// lines are the log's lines with message msg, as maps.
func (l *logSink) lines(msg string) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// A backend added with the admin API survives a reload (SIGHUP) of a file
// that does not know it; the reload applies what changed in the file and
// its log names every backend it adds or removes and the admin change it
// keeps. A PUT of a backend the file then changes too is dropped, with a
// warning naming it.
func TestReloadKeepsAdminChanges(t *testing.T) {
	node := startNATS(t)
	alpha := startBackend(t, "alpha", nil)
	beta := startBackend(t, "beta", nil)
	gamma := startBackend(t, "gamma", nil)
	var sink logSink
	zl := zerolog.New(&sink)
	fast := func(bs ...[2]string) []byte {
		return []byte(fleetYAMLAt(200*time.Millisecond, 100*time.Millisecond, bs...))
	}
	a, g := [2]string{"alpha", alpha.URL()}, [2]string{"gamma", gamma.URL()}
	c := startControllerLogged(t, node.ClientURL(), "c1", string(fast(a)), &zl)
	eventually(t, 10*time.Second, "leader", c.c.Leading)

	if code := httpJSON(t, "PUT", c.admin+"/v1/groups/default/backends/beta", `{"url":"`+beta.URL()+`"}`, nil); code != 200 {
		t.Fatalf("PUT beta: %d", code)
	}
	members := func() string {
		var st controller.StateJSON
		httpJSON(t, "GET", c.admin+"/v1/state", "", &st)
		var out []string
		for _, gr := range st.Groups {
			for _, be := range gr.Backends {
				out = append(out, be.Name)
			}
		}
		return strings.Join(out, ",")
	}

	// The file gains gamma: the reload adds gamma and keeps beta.
	if err := os.WriteFile(c.path, fast(a, g), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.c.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "alpha, beta and gamma in the log's state", func() bool { return members() == "alpha,beta,gamma" })
	if l := sink.lines("reload adds backend"); len(l) != 1 || l[0]["backend"] != "default/gamma" {
		t.Fatalf("reload adds: %v", l)
	}
	if l := sink.lines("reload keeps an admin API change"); len(l) != 1 || l[0]["change"] != "PUT default/beta" {
		t.Fatalf("reload keeps: %v", l)
	}
	if l := sink.lines("reload removes backend"); len(l) != 0 {
		t.Fatalf("reload removes: %v", l)
	}

	// The file drops alpha and adds beta with another URL: alpha goes,
	// the file's beta replaces the admin's, and the log says so.
	if err := os.WriteFile(c.path, fast(g, [2]string{"beta", alpha.URL()}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.c.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "beta and gamma in the log's state", func() bool { return members() == "beta,gamma" })
	if be, _ := c.c.Fleet().Backend("default", "beta"); be.URL != alpha.URL() {
		t.Fatalf("beta after the file changed it: %s, want the file's %s", be.URL, alpha.URL())
	}
	if l := sink.lines("reload removes backend"); len(l) != 1 || l[0]["backend"] != "default/alpha" {
		t.Fatalf("reload removes: %v", l)
	}
	if l := sink.lines("reload changes backend"); len(l) != 1 || l[0]["backend"] != "default/beta" {
		t.Fatalf("reload changes: %v", l)
	}
	if l := sink.lines("reload drops an admin API change"); len(l) != 1 || l[0]["change"] != "PUT default/beta" || l[0]["level"] != "warn" {
		t.Fatalf("reload drops: %v", l)
	}
}
