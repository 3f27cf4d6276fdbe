package config

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/events"
)

// Transports a backend may use.
const (
	TransportStreamableHTTP = events.TransportStreamableHTTP
	TransportSSE            = events.TransportSSE
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
	case TransportStreamableHTTP, TransportSSE:
		return t, ""
	}
	return "", fmt.Sprintf("%q is not a transport (want %s or %s)", t, TransportStreamableHTTP, TransportSSE)
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
