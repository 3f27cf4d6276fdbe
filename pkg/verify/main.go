package verify

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
	"github.com/fleetgate/fleetgate/pkg/cmdline"
)

// DefaultTimeout bounds a whole verification started by Main.
const DefaultTimeout = 30 * time.Second

// Main is `edge verify`: it parses args (flags only; each can also be set
// by FLEETGATE_<FLAG>), runs the verification, prints the JSON report to
// stdout and returns the exit status: ExitConverged (0) only when the
// endpoint converged, ExitStale, ExitIncomplete or ExitUnverifiable for the
// other verdicts, ExitError (with one line on stderr and nothing on stdout)
// when no report could be produced.
//
//	edge verify --url http://127.0.0.1:8080/mcp --controller http://127.0.0.1:8081 --group default
//
// The controller's admin token is read from --admin-token-file or, when
// that is not given, from the environment variable FLEETGATE_ADMIN_TOKEN;
// never from a flag value.
func Main(args []string, stdout, stderr io.Writer) int {
	var o Options
	var timeout time.Duration
	var headers headerFlag
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.StringVar(&o.URL, "url", "", "MCP endpoint to verify (streamable HTTP), required")
	fs.StringVar(&o.ExpectDigest, "expect-digest", "", "catalog digest the endpoint must serve")
	fs.StringVar(&o.Controller, "controller", "", "controller admin URL whose group view is the expectation")
	fs.StringVar(&o.Group, "group", DefaultGroup, "controller group (with --controller)")
	tokenFile := fs.String("admin-token-file", "", "file holding the controller's admin token (with --controller; else FLEETGATE_ADMIN_TOKEN)")
	fs.StringVar(&o.ProtocolVersion, "protocol-version", DefaultProtocolVersion, "MCP protocol version to request")
	fs.IntVar(&o.MaxPages, "max-pages", DefaultMaxPages, "stop the traversal after this many tools/list pages")
	fs.DurationVar(&timeout, "timeout", DefaultTimeout, "deadline of the whole verification")
	fs.Var(&headers, "header", `extra request header "Name: value" (repeatable), e.g. "X-Trace: 1"; a secret such as a bearer token belongs in -header-file or -header-env, not on the command line`)
	headerFile := fs.String("header-file", "", `file of extra request headers, one "Name: value" per line (blank lines and lines starting with # skipped)`)
	headerEnv := fs.String("header-env", "", `environment variable holding extra request headers, one "Name: value" per line`)
	if err := cmdline.Parse(fs, args, os.Getenv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitConverged
		}
		fmt.Fprintf(stderr, "edge verify: %v\n", err)
		return ExitError
	}
	if timeout <= 0 {
		fmt.Fprintf(stderr, "edge verify: invalid value %s for flag -timeout: want > 0\n", timeout)
		return ExitError
	}
	if *headerFile != "" {
		if err := headers.readFile(*headerFile); err != nil {
			fmt.Fprintf(stderr, "edge verify: flag -header-file: %v\n", err)
			return ExitError
		}
	}
	if *headerEnv != "" {
		v, ok := os.LookupEnv(*headerEnv)
		if !ok {
			fmt.Fprintf(stderr, "edge verify: flag -header-env: variable %s is not set\n", *headerEnv)
			return ExitError
		}
		if err := headers.addLines(v, "variable "+*headerEnv); err != nil {
			fmt.Fprintf(stderr, "edge verify: flag -header-env: %v\n", err)
			return ExitError
		}
	}
	o.Header = http.Header(headers)
	if o.Controller != "" {
		tok, err := adminauth.ClientToken(*tokenFile, os.Getenv)
		if err != nil {
			fmt.Fprintf(stderr, "edge verify: %v\n", err)
			return ExitError
		}
		o.ControllerToken = tok
	}

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "edge verify: %v\n", err)
		return ExitError
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		fmt.Fprintf(stderr, "edge verify: write report: %v\n", err)
		return ExitError
	}
	if rep.Verdict != "converged" {
		fmt.Fprintf(stderr, "edge verify: %s: %s\n", rep.Verdict, rep.Reason)
	}
	return rep.ExitCode()
}

// headerFlag collects repeated --header "Name: value" flags.
type headerFlag http.Header

func (h *headerFlag) String() string {
	if h == nil || *h == nil {
		return ""
	}
	var parts []string
	for k, vs := range *h {
		for _, v := range vs {
			parts = append(parts, k+": "+v)
		}
	}
	return strings.Join(parts, ", ")
}

// Set adds one "Name: value". Its error never quotes the input: a value
// without its name may be a token.
func (h *headerFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" || !validHeaderName(name) {
		return errors.New(`header: want "Name: value" (a token name, a colon, the value)`)
	}
	if *h == nil {
		*h = headerFlag{}
	}
	http.Header(*h).Add(name, strings.TrimSpace(value))
	return nil
}

// maxHeaderFile bounds -header-file and -header-env.
const maxHeaderFile = 64 << 10

// readFile adds the headers of a file, one "Name: value" per line.
func (h *headerFlag) readFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read headers: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxHeaderFile+1))
	if err != nil {
		return fmt.Errorf("read headers: %w", err)
	}
	return h.addLines(string(data), "file "+path)
}

// addLines adds "Name: value" lines (LF or CRLF; blank lines and lines
// starting with # skipped) read from src. Errors name src and the line,
// never its content.
func (h *headerFlag) addLines(text, src string) error {
	if len(text) > maxHeaderFile {
		return fmt.Errorf("%s: over %d bytes", src, maxHeaderFile)
	}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimRight(line, "\r")
		if t := strings.TrimSpace(line); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		if err := h.Set(line); err != nil {
			return fmt.Errorf("%s: line %d: %w", src, i+1, err)
		}
	}
	return nil
}

// validHeaderName reports whether s is an RFC 9110 token.
func validHeaderName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return s != ""
}
