package credential

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Ref names where a header value is read from: exactly one of Env (an
// environment variable) or File (an absolute path). A Ref is the only
// form a credential takes in config, events, state, logs and errors.
type Ref struct {
	Env  string `json:"env,omitempty"`
	File string `json:"file,omitempty"`
}

// Bounds of a reference.
const (
	// MaxEnvName bounds an environment variable name.
	MaxEnvName = 128
	// MaxPath bounds a file path.
	MaxPath = 4096
	// MaxRefJSON bounds the JSON text of one reference (ParseRefJSON).
	MaxRefJSON = 8 << 10
)

// ErrLiteral is the refusal of a header value given as a literal string.
var ErrLiteral = errors.New("literal header values are not allowed; use {env: ...} or {file: ...}")

// ErrInvalidRef is matched by every refusal of a malformed reference.
var ErrInvalidRef = errors.New("invalid credential reference")

// String prints the reference, never a value: "env NAME" or "file PATH",
// and "invalid reference" for one that Validate refuses (it may be a
// pasted secret).
func (r Ref) String() string {
	if r.Validate() != nil {
		return "invalid reference"
	}
	switch {
	case r.Env != "" && r.File == "":
		return "env " + r.Env
	case r.File != "" && r.Env == "":
		return "file " + r.File
	}
	return "invalid reference"
}

// Validate checks that r names exactly one source, an environment variable
// name ([A-Za-z_][A-Za-z0-9_]*, at most MaxEnvName bytes) or an absolute,
// clean path (at most MaxPath bytes, no NUL). Its messages never quote
// what they refuse: a malformed reference may be a pasted secret.
func (r Ref) Validate() error {
	switch {
	case r.Env != "" && r.File != "":
		return fmt.Errorf("%w: want one of env or file, not both", ErrInvalidRef)
	case r.Env != "":
		if !envName(r.Env) {
			return fmt.Errorf("%w: env: want an environment variable name ([A-Za-z_][A-Za-z0-9_]*, at most %d characters)", ErrInvalidRef, MaxEnvName)
		}
	case r.File != "":
		if len(r.File) > MaxPath || strings.IndexByte(r.File, 0) >= 0 || !filepath.IsAbs(r.File) || filepath.Clean(r.File) != r.File {
			return fmt.Errorf("%w: file: want an absolute, clean path (at most %d bytes)", ErrInvalidRef, MaxPath)
		}
	default:
		return fmt.Errorf("%w: want {env: NAME} or {file: /path}", ErrInvalidRef)
	}
	return nil
}

func envName(s string) bool {
	if s == "" || len(s) > MaxEnvName {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// ParseRefJSON reads one reference as the admin API carries it: an object
// {"env": "NAME"} or {"file": "/path"}, with no other member. A JSON
// string is ErrLiteral; anything else malformed matches ErrInvalidRef.
// No error quotes the input.
func ParseRefJSON(data []byte) (Ref, error) {
	data = bytes.TrimSpace(data)
	if len(data) > MaxRefJSON {
		return Ref{}, fmt.Errorf("%w: reference is %d bytes, limit %d", ErrInvalidRef, len(data), MaxRefJSON)
	}
	if len(data) > 0 && data[0] == '"' {
		return Ref{}, ErrLiteral
	}
	if len(data) == 0 || data[0] != '{' {
		return Ref{}, fmt.Errorf("%w: want an object {\"env\": NAME} or {\"file\": PATH}", ErrInvalidRef)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return Ref{}, fmt.Errorf("%w: not a JSON object", ErrInvalidRef)
	}
	var r Ref
	for k, v := range members {
		var dst *string
		switch k {
		case "env":
			dst = &r.Env
		case "file":
			dst = &r.File
		default:
			return Ref{}, fmt.Errorf("%w: unknown member (want env or file)", ErrInvalidRef)
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return Ref{}, fmt.Errorf("%w: %s: want a string", ErrInvalidRef, k)
		}
		if *dst == "" {
			return Ref{}, fmt.Errorf("%w: %s: must not be empty", ErrInvalidRef, k)
		}
	}
	if err := r.Validate(); err != nil {
		return Ref{}, err
	}
	return r, nil
}
