// Package cmdline holds what fleetgate's commands share on their command
// line: every flag can be set by the environment variable FLEETGATE_<FLAG>
// (upper case, dashes as underscores; a flag given on the command line
// wins), and the zerolog output chosen by --log-format and --log-level.
//
//	var lf cmdline.LogFlags
//	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
//	lf.Define(fs)
//	... define flags ...
//	if err := cmdline.Parse(fs, os.Args[1:], os.Getenv); err != nil { ... }
//	if err := lf.Check(); err != nil { ... }
//	log := lf.Logger(os.Stderr)
//
// Importing the package makes zerolog write durations (Event.Dur) as Go
// duration strings with their unit ("898ms", "1m30s") instead of bare
// milliseconds: every command's logs carry units.
package cmdline

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
)

func init() {
	// Process-wide, set before any goroutine logs: durations with units.
	zerolog.DurationFieldFormat = zerolog.DurationFormatString
}

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

// Log levels a --log-level takes, most verbose first.
var logLevels = []string{"debug", "info", "warn", "error"}

// CheckLogLevel validates a --log-level value.
func CheckLogLevel(level string) error {
	for _, l := range logLevels {
		if level == l {
			return nil
		}
	}
	return fmt.Errorf("invalid value %q for flag -log-level: want %s", level, strings.Join(logLevels, ", "))
}

// LogFlags are a command's --log-format and --log-level.
type LogFlags struct {
	// Format is console, json or "" (console on a terminal, else json).
	Format string
	// Level is the least severe level written: debug, info (default),
	// warn or error.
	Level string
}

// Define adds --log-format and --log-level to fs.
func (l *LogFlags) Define(fs *flag.FlagSet) {
	fs.StringVar(&l.Format, "log-format", "", "console or json (default console on a terminal, else json)")
	fs.StringVar(&l.Level, "log-level", "info", "least severe level logged: "+strings.Join(logLevels, ", "))
}

// Check validates both flags.
func (l *LogFlags) Check() error {
	if err := CheckLogFormat(l.Format); err != nil {
		return err
	}
	if l.Level == "" {
		return nil
	}
	return CheckLogLevel(l.Level)
}

// Logger is Logger(l.Format, out) at l.Level ("" is info).
func (l *LogFlags) Logger(out io.Writer) zerolog.Logger {
	level := zerolog.InfoLevel
	if l.Level != "" {
		if lv, err := zerolog.ParseLevel(l.Level); err == nil {
			level = lv
		}
	}
	return Logger(l.Format, out).Level(level)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

// Logger returns a zerolog logger writing to out: console output when
// format is "console", or when it is "" and out is a terminal; JSON else.
// Console output is coloured only on a terminal: redirected to a file or
// a pipe it carries no escape codes.
func Logger(format string, out io.Writer) zerolog.Logger {
	tty := isTerminal(out)
	if format == "" {
		format = "json"
		if tty {
			format = "console"
		}
	}
	if format == "console" {
		return zerolog.New(zerolog.ConsoleWriter{Out: out, TimeFormat: time.RFC3339, NoColor: !tty}).With().Timestamp().Logger()
	}
	return zerolog.New(out).With().Timestamp().Logger()
}
