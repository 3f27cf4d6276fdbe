package main

import (
	"bytes"
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
