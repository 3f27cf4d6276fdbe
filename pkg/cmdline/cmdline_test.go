package cmdline

import (
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
