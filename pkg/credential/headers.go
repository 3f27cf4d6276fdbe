package credential

import (
	"errors"
	"fmt"
	"maps"
	"net/textproto"
	"slices"
	"strings"
)

// Headers maps a header name (canonical form, textproto) to the reference
// its value is read from. They are set on every request to one backend.
type Headers map[string]Ref

// Bounds of a backend's headers.
const (
	// MaxHeaders bounds the headers of one backend.
	MaxHeaders = 32
	// MaxHeaderName bounds a header name.
	MaxHeaderName = 128
	// MaxValue bounds one resolved value (and so a file read).
	MaxValue = 64 << 10
)

// ErrInvalidHeader is matched by every refusal of a header name.
var ErrInvalidHeader = errors.New("invalid header name")

// reserved are the headers the transport or the MCP protocol own: hop-by-hop
// headers, framing, content negotiation and the proxy's. Every name starting
// with "Mcp-" is reserved too.
var reserved = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Content-Encoding": true,
	"Transfer-Encoding": true, "Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Proxy-Authorization": true, "Proxy-Authenticate": true, "Te": true, "Trailer": true,
	"Upgrade": true, "Expect": true, "Accept": true, "Accept-Encoding": true, "Last-Event-Id": true,
}

// CheckName checks a header name: an RFC 9110 token of at most
// MaxHeaderName bytes that is not a reserved header (Host, Content-Length,
// Transfer-Encoding, Connection and the other hop-by-hop and framing
// headers, Accept, Last-Event-ID, and every Mcp-* header such as
// Mcp-Session-Id and Mcp-Protocol-Version). It returns the canonical form.
// Its messages quote a name only once it is a valid token.
func CheckName(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty", ErrInvalidHeader)
	}
	if len(name) > MaxHeaderName {
		return "", fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidHeader, len(name), MaxHeaderName)
	}
	for i := 0; i < len(name); i++ {
		if !tchar(name[i]) {
			return "", fmt.Errorf("%w: not a token (letters, digits and !#$%%&'*+-.^_`|~)", ErrInvalidHeader)
		}
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	if reserved[canon] || strings.HasPrefix(canon, "Mcp-") {
		return "", fmt.Errorf("%w: %q is set by the gateway's transport or the MCP protocol", ErrInvalidHeader, canon)
	}
	return canon, nil
}

func tchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// Validate checks every name (CheckName, in canonical form, so that no two
// differ by case only), every reference, and the count.
func (h Headers) Validate() error {
	if len(h) > MaxHeaders {
		return fmt.Errorf("%w: %d headers, limit %d", ErrInvalidHeader, len(h), MaxHeaders)
	}
	for _, name := range h.Names() {
		canon, err := CheckName(name)
		if err != nil {
			return err
		}
		if canon != name {
			return fmt.Errorf("%w: %q is not in canonical form (%q)", ErrInvalidHeader, name, canon)
		}
		if err := h[name].Validate(); err != nil {
			return fmt.Errorf("header %s: %w", name, err)
		}
	}
	return nil
}

// Names returns the header names, sorted.
func (h Headers) Names() []string { return slices.Sorted(maps.Keys(h)) }

// Clone returns a copy of h (nil for an empty h).
func (h Headers) Clone() Headers {
	if len(h) == 0 {
		return nil
	}
	return maps.Clone(h)
}

// Equal reports whether h and o name the same headers with the same
// references (nil and empty are equal).
func (h Headers) Equal(o Headers) bool { return maps.Equal(h, o) }
