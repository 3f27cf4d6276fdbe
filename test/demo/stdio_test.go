package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDemoServesStdioBackend: the demo fleet serves its stdio backend
// notes through the edge (a call answered by the edge's own instance),
// and after Ctrl-C no instance of it is left on the machine.
func TestDemoServesStdioBackend(t *testing.T) {
	if err := checkPorts(); err != nil {
		t.Skipf("demo ports busy on this machine: %v", err)
	}
	dir := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd, out, done, pids := startDemo(t, ctx)
	parents := map[int]bool{pids["controller"]: true, pids["edge"]: true}
	defer func() { _ = cmd.Process.Kill() }()

	cl := mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "1"}, nil)
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://127.0.0.1:8080/mcp"}, nil)
	if err != nil {
		t.Fatalf("connect to the demo's edge: %v\n%s", err, out)
	}
	defer cs.Close()
	// The controller probes notes once its instance runs: its tools are
	// in the catalog within a few probe intervals (1 s in fleet.yaml).
	for !hasTool(ctx, cs, "notes_echo") {
		select {
		case <-ctx.Done():
			t.Fatalf("notes_echo never listed\n%s", tail(out.String(), 20))
		case <-time.After(200 * time.Millisecond):
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notes_echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || text0(res) != "notes: hi" {
		t.Fatalf("notes_echo: %v %+v", err, res)
	}
	running := stdioInstances(t, dir, parents)
	if len(running) != 2 {
		t.Errorf("stdio instances while the demo runs: %v, want the controller's and the edge's", running)
	}
	// The dashboard's edge card shows the edge's own instance (its status
	// record): up, with the pid of the edge's child.
	edgeChild := stdioInstances(t, dir, map[int]bool{pids["edge"]: true})
	for shown := false; !shown; {
		shown = len(edgeChild) == 1 && edgeInstanceShown(ctx, edgeChild[0])
		if !shown {
			select {
			case <-ctx.Done():
				t.Fatalf("the edge's notes instance (pids %v) not on the dashboard's /v1/edges\n%s", edgeChild, tail(out.String(), 20))
			case <-time.After(200 * time.Millisecond):
			}
		}
	}

	cs.Close()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("demo after SIGINT: %v\n%s", err, out)
		}
	case <-ctx.Done():
		t.Fatalf("demo did not stop after SIGINT\n%s", out)
	}
	for _, pid := range running {
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !bytes.Contains(st, []byte(") Z ")) {
			t.Errorf("stdio instance %d left after the demo stopped", pid)
		}
	}
}

func hasTool(ctx context.Context, cs *mcp.ClientSession, name string) bool {
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return false
	}
	for _, tl := range res.Tools {
		if tl.Name == name {
			return true
		}
	}
	return false
}

func text0(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// stdioInstances are the PIDs of the processes running dir's demo binary
// as the stdio backend notes whose parent is one of parents.
func stdioInstances(t *testing.T, dir string, parents map[int]bool) []int {
	t.Helper()
	want := []byte(filepath.Join(dir, "demo") + "\x00backend\x00--name\x00notes\x00--stdio")
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !bytes.HasPrefix(b, want) {
			continue
		}
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, the last ')' ends it.
		fields := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:]))
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); parents[ppid] {
			pids = append(pids, pid)
		}
	}
	return pids
}

// edgeInstanceShown reports whether the demo controller's GET /v1/edges
// shows an edge whose stdio backend notes is up with process pid.
func edgeInstanceShown(ctx context.Context, pid int) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:8081/v1/edges", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var out struct {
		Edges []struct {
			Stdio []struct {
				Backend, State string
				PID            int
			}
		}
	}
	if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out) != nil {
		return false
	}
	for _, e := range out.Edges {
		for _, i := range e.Stdio {
			if i.Backend == "notes" && i.State == "up" && i.PID == pid {
				return true
			}
		}
	}
	return false
}
