package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSessionFlags(t *testing.T) {
	env := func(string) string { return "" }
	c, err := parse([]string{"--identity-header", "X-Fleetgate-User", "--session-idle-timeout", "5m", "--audit-arguments"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.sessions.identityHeader != "X-Fleetgate-User" || c.sessions.idleTimeout != 5*time.Minute || !c.sessions.auditArguments {
		t.Fatalf("parsed %+v", c.sessions)
	}
	if r := c.sessions.records(nil); r == nil || r.Store.IdleTimeout != 5*time.Minute {
		t.Fatalf("records %+v", r)
	}
	for _, bad := range [][]string{
		{"--session-idle-timeout", "500ms"},
		{"--identity-header", "X User"},
		{"--audit-arguments", "--no-call-trail"},
	} {
		if _, err := parse(bad, env); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	c, err = parse([]string{"--local-sessions"}, env)
	if err != nil || c.sessions.records(nil) != nil {
		t.Fatalf("--local-sessions: %v", err)
	}
}

// `edge verify` is the verify package's command: without --url it fails
// with its own usage error.
func TestVerifySubcommandWired(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := verifyMain(nil, &out, &errOut); code == 0 || errOut.Len() == 0 {
		t.Fatalf("verify without --url: exit %d, stderr %q", code, errOut.String())
	}
}

// --session-owner-key-file gives the edge its owner key (a short secret
// or a missing file refused, naming the flag); --trusted-proxies and
// --trusted-proxy-header its client-address resolver.
func TestOwnerKeyAndTrustedProxyFlags(t *testing.T) {
	env := func(string) string { return "" }
	dir := t.TempDir()
	good, short := filepath.Join(dir, "owner.key"), filepath.Join(dir, "short.key")
	if err := os.WriteFile(good, []byte(strings.Repeat("k", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("too short"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := parse([]string{"--session-owner-key-file", good, "--trusted-proxies", "10.0.0.0/8", "--trusted-proxy-header", "Forwarded"}, env)
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.sessions.owners()
	if err != nil || k == nil || !strings.HasPrefix(k.Hash("alice"), "hmac-sha256:") {
		t.Fatalf("owner key: %v, %v", k, err)
	}
	if c.access.clients == nil {
		t.Fatal("no client-address resolver with --trusted-proxies")
	}
	c, _ = parse(nil, env)
	if k, err := c.sessions.owners(); k != nil || err != nil || c.access.clients != nil {
		t.Fatalf("defaults: owner key %v (%v), resolver %v", k, err, c.access.clients)
	}
	for _, f := range []string{short, filepath.Join(dir, "missing")} {
		c, _ := parse([]string{"--session-owner-key-file", f}, env)
		if _, err := c.sessions.owners(); err == nil || !strings.Contains(err.Error(), "-session-owner-key-file") {
			t.Errorf("owner key file %s: %v", f, err)
		}
	}
	for _, bad := range [][]string{{"--trusted-proxies", "10.0.0.0/33"}, {"--trusted-proxies", "proxy.local"},
		{"--trusted-proxies", "10.0.0.1", "--trusted-proxy-header", "X-Real-IP"}} {
		if _, err := parse(bad, env); err == nil || !strings.Contains(err.Error(), "-trusted-prox") {
			t.Errorf("%v: %v", bad, err)
		}
	}
}

// -signin-key-file gives the sign-ins a key of at least 32 bytes (a
// shorter one is refused naming the flag); -no-signins keeps none.
func TestSignInFlags(t *testing.T) {
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short"), filepath.Join(dir, "long")
	if err := os.WriteFile(short, []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(long, []byte(strings.Repeat("k", 40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o, err := (&sessionConfig{signInKey: long, publicURL: "https://mcp.example.com/"}).signIns(nil); err != nil || o.Key == nil || o.PublicURL != "https://mcp.example.com" {
		t.Fatalf("%+v %v", o, err)
	}
	if o, err := (&sessionConfig{}).signIns(nil); err != nil || o == nil || o.Key != nil {
		t.Fatalf("no key file: %+v %v", o, err)
	}
	if _, err := (&sessionConfig{signInKey: short}).signIns(nil); err == nil || !strings.Contains(err.Error(), "-signin-key-file") {
		t.Fatalf("short key: %v", err)
	}
	if o, err := (&sessionConfig{noSignIns: true, signInKey: short}).signIns(nil); err != nil || o != nil {
		t.Fatalf("-no-signins: %+v %v", o, err)
	}
}
