package auth

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// checkDepth refuses JSON nested deeper than max arrays and objects. It
// is a linear scan that runs before the payload is decoded.
func checkDepth(b []byte, max int) error {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				return fmt.Errorf("nested deeper than %d", max)
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return nil
}

// readScopes reads the scope claim (a space-separated string, RFC 8693
// and RFC 9068) and the scp claim (an array of strings, or a string), and
// returns their union in order, without duplicates.
func readScopes(scope, scp json.RawMessage) ([]string, error) {
	var out []string
	add := func(s string) error {
		for _, f := range strings.Fields(s) {
			if !slices.Contains(out, f) {
				if len(out) == maxScopes {
					return fmt.Errorf("more than %d scopes", maxScopes)
				}
				out = append(out, f)
			}
		}
		return nil
	}
	for _, raw := range []json.RawMessage{scope, scp} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			if err := add(s); err != nil {
				return nil, err
			}
			continue
		}
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("scope claims: want a string or an array of strings")
		}
		for _, s := range list {
			if err := add(s); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// missingScopes are those of required that have is lacks.
func missingScopes(required, have []string) []string {
	var missing []string
	for _, s := range required {
		if !slices.Contains(have, s) {
			missing = append(missing, s)
		}
	}
	return missing
}

func isVisibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
