package cmdline

import (
	"bytes"
	"flag"
	"strings"
	"testing"
	"time"
)

func TestParseEnvAndFlags(t *testing.T) {
	env := map[string]string{"FLEETGATE_DATA_DIR": "/from/env", "FLEETGATE_ID": "env-id", "FLEETGATE_WAIT": "3s"}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	dir := fs.String("data-dir", "./data", "")
	id := fs.String("id", "", "")
	wait := fs.Duration("wait", time.Second, "")
	if err := Parse(fs, []string{"--id", "flag-id"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if *dir != "/from/env" || *id != "flag-id" || *wait != 3*time.Second {
		t.Fatalf("dir=%q id=%q wait=%v", *dir, *id, *wait)
	}
}

func TestParseErrorsNameTheInput(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--wait", "soon"}, nil, "-wait"},
		{nil, map[string]string{"FLEETGATE_WAIT": "soon"}, "FLEETGATE_WAIT"},
		{[]string{"extra"}, nil, `unexpected argument "extra"`},
		{[]string{"--nope"}, nil, "-nope"},
	}
	for _, c := range cases {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.Duration("wait", time.Second, "")
		err := Parse(fs, c.args, func(k string) string { return c.env[k] })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: err = %v, want it to name %q", c.args, c.env, err, c.want)
		}
	}
	if CheckLogFormat("xml") == nil || CheckLogFormat("json") != nil || CheckLogFormat("") != nil {
		t.Fatal("CheckLogFormat")
	}
}

// --log-level is respected: at the default (info) a debug line is absent,
// at debug it is written; an unknown level is refused naming the flag.
func TestLogLevel(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		wantDebug bool
	}{{nil, false}, {[]string{"--log-level", "info"}, false}, {[]string{"--log-level", "debug"}, true}} {
		var lf LogFlags
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		lf.Define(fs)
		if err := Parse(fs, tc.args, func(string) string { return "" }); err != nil {
			t.Fatal(err)
		}
		if err := lf.Check(); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		log := lf.Logger(&buf)
		log.Debug().Msg("a debug line")
		log.Info().Msg("an info line")
		if got := strings.Contains(buf.String(), "a debug line"); got != tc.wantDebug || !strings.Contains(buf.String(), "an info line") {
			t.Errorf("%v: debug line written %v, want %v; log:\n%s", tc.args, got, tc.wantDebug, buf.String())
		}
	}
	var lf LogFlags
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	lf.Define(fs)
	if err := Parse(fs, nil, func(k string) string { return map[string]string{"FLEETGATE_LOG_LEVEL": "loud"}[k] }); err != nil {
		t.Fatal(err)
	}
	if err := lf.Check(); err == nil || !strings.Contains(err.Error(), "-log-level") {
		t.Fatalf("level loud: %v, want an error naming -log-level", err)
	}
}

// Console output not on a terminal has no colour codes; durations carry
// their unit.
func TestLoggerPlainAndUnits(t *testing.T) {
	var buf bytes.Buffer
	log := Logger("console", &buf)
	log.Warn().Dur("retry_in", 898*time.Millisecond).Msg("event log unavailable")
	if strings.Contains(buf.String(), "\x1b[") {
		t.Fatalf("colour codes in redirected console output: %q", buf.String())
	}
	if !strings.Contains(buf.String(), "retry_in=898ms") {
		t.Fatalf("duration without its unit: %q", buf.String())
	}
	buf.Reset()
	log = Logger("", &buf) // not a terminal: JSON
	log.Info().Dur("took", 1500*time.Millisecond).Msg("x")
	if !strings.Contains(buf.String(), `"took":"1.5s"`) {
		t.Fatalf("JSON duration without its unit: %q", buf.String())
	}
}
