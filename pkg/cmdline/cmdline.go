// Package cmdline holds what fleetgate's commands share on their command
// line: every flag can be set by the environment variable FLEETGATE_<FLAG>
// (upper case, dashes as underscores; a flag given on the command line
// wins), and the zerolog output chosen by --log-format.
//
//	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
//	... define flags ...
//	if err := cmdline.Parse(fs, os.Args[1:], os.Getenv); err != nil { ... }
//	log := cmdline.Logger(format, os.Stderr)
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"
)

// EnvName is the environment variable of a flag.
func EnvName(flagName string) string {
	return "FLEETGATE_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse parses args into fs, then sets every flag not given from its
// environment variable. Errors name the flag or the variable; positional
// arguments are refused.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stderr)
			fs.PrintDefaults()
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		env := EnvName(f.Name)
		if v := getenv(env); v != "" && !given[f.Name] && err == nil {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("invalid value %q for %s: %v", v, env, serr)
			}
		}
	})
	return err
}

// CheckLogFormat validates a --log-format value ("" means automatic).
func CheckLogFormat(format string) error {
	switch format {
	case "", "console", "json":
		return nil
	}
	return fmt.Errorf("invalid value %q for flag -log-format: want console or json", format)
}

// Logger returns a zerolog logger writing to out: console output when
// format is "console", or when it is "" and out is a terminal; JSON else.
func Logger(format string, out *os.File) zerolog.Logger {
	if format == "" {
		format = "json"
		if fi, err := out.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			format = "console"
		}
	}
	if format == "console" {
		return zerolog.New(zerolog.ConsoleWriter{Out: out, TimeFormat: time.RFC3339}).With().Timestamp().Logger()
	}
	return zerolog.New(out).With().Timestamp().Logger()
}
