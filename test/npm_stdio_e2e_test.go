package test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// npmFilesystem is the reference filesystem server the opt-in test runs,
// pinned.
const npmFilesystem = "@modelcontextprotocol/server-filesystem@2026.8.31"

// TestNPMFilesystemStdio (opt-in: FLEETGATE_NPM_STDIO=1; needs node and
// npm, and the npm registry): the official filesystem server from npm,
// run by the controller and the edge from an allow-list entry, served
// through the edge. Its tool definitions reach a client exactly as the
// server sends them (raw JSON on both sides, the name aside: annotations,
// titles, schemas), and a call reads a file of the directory given in
// the fleet config's args.
func TestNPMFilesystemStdio(t *testing.T) {
	if os.Getenv("FLEETGATE_NPM_STDIO") == "" {
		t.Skip("opt-in: FLEETGATE_NPM_STDIO=1 installs " + npmFilesystem + " from npm")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("no node on PATH: %v", err)
	}
	pkgDir := t.TempDir()
	install := exec.Command("npm", "install", "--prefix", pkgDir, "--no-audit", "--no-fund", "--loglevel=error", npmFilesystem)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s: %v\n%s", npmFilesystem, err, out)
	}
	script := filepath.Join(pkgDir, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from the fleet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	commands := filepath.Join(dir, "commands.yaml")
	if err := os.WriteFile(commands, fmt.Appendf(nil, "filesystem: [%q, %q]\n", node, script), 0o644); err != nil {
		t.Fatal(err)
	}
	fleet := filepath.Join(dir, "fleet.yaml")
	cfg := fmt.Sprintf("groups:\n  - name: default\n    backends:\n      - name: files\n        transport: stdio\n        command: filesystem\n        args: [%q]\nhealth:\n  interval: 1s\n  timeout: 5s\n", root)
	if err := os.WriteFile(fleet, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	nn := startNATS(t)
	startLoggedProc(t, "controller", nil, "--config", fleet, "--nats-url", nn.ClientURL(), "--id", "npm-ctl",
		"--admin-listen", freeAddr(t), "--data-dir", t.TempDir(), "--log-format", "json", "--stdio-commands", commands)
	listen, admin := freeAddr(t), freeAddr(t)
	startLoggedProc(t, "edge", nil, "--nats-url", nn.ClientURL(), "--listen", listen, "--admin-listen", admin,
		"--id", "npm-edge", "--log-format", "json", "--stdio-commands", commands)
	waitEdgeReady(t, admin)
	mcpURL := "http://" + listen + "/mcp"
	c := connectMCP(t, mcpURL, "2025-11-25")
	eventually(t, 60*time.Second, "files_read_text_file listed", func() bool {
		res, err := c.call("files_read_text_file", map[string]any{"path": filepath.Join(root, "hello.txt")})
		return err == nil && !res.IsError && text(res) == "hello from the fleet\n"
	})

	// The definitions: the server's own over stdio, and the edge's.
	direct := stdioToolsList(t, node, script, root)
	sid := rawSession(t, mcpURL, nil)
	through := edgeToolsList(t, mcpURL, sid)
	if len(direct) == 0 || len(direct) != len(through) {
		t.Fatalf("tools: %d from the server, %d through the edge", len(direct), len(through))
	}
	for name, def := range direct {
		got, ok := through["files_"+name]
		if !ok {
			t.Errorf("%s: not served by the edge", name)
			continue
		}
		got["name"] = name
		if !reflect.DeepEqual(def, got) {
			a, _ := json.Marshal(def)
			b, _ := json.Marshal(got)
			t.Errorf("%s: the edge serves\n%s\nthe server sent\n%s", name, b, a)
		}
	}
}

// stdioToolsList runs the server once, lists its tools over stdio as a
// 2025-11-25 client and returns each definition as raw JSON by name.
func stdioToolsList(t *testing.T, node, script, root string) map[string]map[string]any {
	t.Helper()
	cmd := exec.Command(node, script, root)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"direct","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		if tools := toolsOf(t, sc.Bytes(), 2); tools != nil {
			return tools
		}
	}
	t.Fatalf("the server gave no tools/list answer: %v", sc.Err())
	return nil
}

// edgeToolsList lists the tools of session sid through the edge, raw.
func edgeToolsList(t *testing.T, mcpURL, sid string) map[string]map[string]any {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimPrefix(line, []byte("data: "))
		if tools := toolsOf(t, line, 2); tools != nil {
			return tools
		}
	}
	t.Fatalf("tools/list through the edge: %d %s", resp.StatusCode, b)
	return nil
}

// toolsOf is the tools of msg, the answer to request id, by name; nil
// when msg is not that answer.
func toolsOf(t *testing.T, msg []byte, id int) map[string]map[string]any {
	var m struct {
		ID     int `json:"id"`
		Result struct {
			Tools []map[string]any `json:"tools"`
		} `json:"result"`
	}
	if json.Unmarshal(msg, &m) != nil || m.ID != id || m.Result.Tools == nil {
		return nil
	}
	out := map[string]map[string]any{}
	for _, tl := range m.Result.Tools {
		name, _ := tl["name"].(string)
		out[name] = tl
	}
	return out
}
