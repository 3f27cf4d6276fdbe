package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/stdio"
)

// Transports a backend may use.
const (
	TransportStreamableHTTP = events.TransportStreamableHTTP
	TransportSSE            = events.TransportSSE
	// TransportStdio: a command of each host's allow-list (package stdio).
	TransportStdio = events.TransportStdio
)

// DefaultSeparator joins a backend name and a tool name into an exposed
// tool name.
const DefaultSeparator = "_"

// namePattern is the rule for backend and group names.
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// checkName checks a backend or group name; kind is "backend" or "group".
func checkName(kind, name string) string {
	if name == "" {
		return "is required"
	}
	if !namePattern.MatchString(name) {
		return fmt.Sprintf("%s name %q does not match [a-z0-9][a-z0-9-]{0,31}", kind, name)
	}
	return ""
}

// checkURL checks a backend URL: absolute http or https with a host.
func checkURL(raw string) string {
	if raw == "" {
		return "is required"
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		if strings.Contains(raw, "@") {
			return "is not an http(s) URL (not quoted: it may carry user info)"
		}
		return fmt.Sprintf("%q is not an http(s) URL", raw)
	}
	return ""
}

// resolveTransport returns the transport with its default applied, or a
// message when it is not one of the known transports.
func resolveTransport(t string) (string, string) {
	switch t {
	case "":
		return TransportStreamableHTTP, ""
	case TransportStreamableHTTP, TransportSSE, TransportStdio:
		return t, ""
	}
	return "", fmt.Sprintf("%q is not a transport (want %s, %s or %s)", t, TransportStreamableHTTP, TransportSSE, TransportStdio)
}

// checkStdio checks the stdio members of b against its transport (already
// resolved): a stdio backend has a command (an entry name, never a path),
// bounded args and env references, and no url, headers or
// allow_link_local; any other backend has no command, args or env. It
// returns the field at fault and why.
func checkStdio(b Backend) (string, string) {
	if b.Transport != TransportStdio {
		switch {
		case b.Command != "":
			return "command", "is only for transport stdio"
		case len(b.Args) > 0:
			return "args", "is only for transport stdio"
		case len(b.Env) > 0:
			return "env", "is only for transport stdio"
		}
		return "", ""
	}
	switch {
	case b.URL != "":
		return "url", "is not for transport stdio (it names a command)"
	case len(b.Headers) > 0:
		return "headers", "is not for transport stdio (use env)"
	case b.AllowLinkLocal:
		return "allow_link_local", "is not for transport stdio"
	case b.Command == "":
		return "command", "is required for transport stdio (an entry of the hosts' --stdio-commands)"
	}
	if err := stdio.CheckName(b.Command); err != nil {
		return "command", err.Error()
	}
	if err := stdio.CheckArgs(b.Args); err != nil {
		return "args", err.Error()
	}
	if err := stdio.CheckEnv(b.Env); err != nil {
		return "env", err.Error()
	}
	return "", ""
}

// checkSeparator checks the aggregation separator: non-empty and made only
// of characters valid in MCP tool names.
func checkSeparator(sep string) string {
	if sep == "" {
		return "must not be empty"
	}
	if err := catalog.ValidateName(sep); err != nil {
		return fmt.Sprintf("%q: %v", sep, err)
	}
	return ""
}

// checkToolName checks an exposed tool name in pinned_tools.
func checkToolName(name string) string {
	if err := catalog.ValidateName(name); err != nil {
		return fmt.Sprintf("%q is not a valid tool name: %v", name, err)
	}
	return ""
}
