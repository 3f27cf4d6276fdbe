package stdio

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// Bounds of an allow-list file and of what a backend adds to an entry.
const (
	// MaxFile bounds the allow-list file.
	MaxFile = 1 << 20
	// MaxEntries bounds the entries of an allow-list.
	MaxEntries = 256
	// MaxArgs bounds an entry's argv, and a backend's extra args.
	MaxArgs = 64
	// MaxArg bounds one argument.
	MaxArg = 4096
	// MaxEnv bounds the variables of an entry, and of a backend.
	MaxEnv = 64
	// MaxValue bounds a literal variable value of an entry.
	MaxValue = 8 << 10
)

// ErrNotAllowed is matched by the refusal of a command name that the
// host's allow-list does not hold.
var ErrNotAllowed = errors.New("not in the host's stdio allow-list")

// ErrInvalid is matched by every refusal of a malformed allow-list, entry
// name, argument or variable.
var ErrInvalid = errors.New("invalid stdio command")

// Command is one entry of the allow-list: the program and its arguments,
// and the variables set for it on top of the clean environment.
type Command struct {
	// Argv is the program (a name looked up in PATH, or a path) and its
	// own arguments; a backend's args are appended.
	Argv []string
	// Env are the entry's variables: a literal value (the operator's own
	// file may hold one) or a credential reference resolved at each start.
	Env map[string]Value
}

// Value is one variable's value: a literal, or a reference.
type Value struct {
	Literal string
	Ref     credential.Ref // set when not a literal
}

// Commands is a host's allow-list, by entry name. The zero value allows
// nothing.
type Commands map[string]Command

// namePattern is the rule for entry names (the fleet config's command).
var namePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,63}$`)

// envPattern is the rule for variable names.
var envPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)

// CheckName checks an entry name as a fleet config or admin call gives it.
func CheckName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("%w: command %q is not an entry name ([a-z0-9][a-z0-9_.-]{0,63})", ErrInvalid, clip(name))
	}
	return nil
}

// CheckArgs checks a backend's extra arguments: at most MaxArgs, each at
// most MaxArg bytes, without NUL.
func CheckArgs(args []string) error {
	if len(args) > MaxArgs {
		return fmt.Errorf("%w: %d args, limit %d", ErrInvalid, len(args), MaxArgs)
	}
	for i, a := range args {
		if len(a) > MaxArg || strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("%w: args[%d]: at most %d bytes, no NUL", ErrInvalid, i, MaxArg)
		}
	}
	return nil
}

// CheckEnv checks a backend's variables: at most MaxEnv, names
// [A-Za-z_][A-Za-z0-9_]*, values valid references. No message quotes a
// reference.
func CheckEnv(env map[string]credential.Ref) error {
	if len(env) > MaxEnv {
		return fmt.Errorf("%w: %d variables, limit %d", ErrInvalid, len(env), MaxEnv)
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		if !envPattern.MatchString(k) {
			return fmt.Errorf("%w: env: variable name not [A-Za-z_][A-Za-z0-9_]{0,127}", ErrInvalid)
		}
		if err := env[k].Validate(); err != nil {
			return fmt.Errorf("env %s: %w", k, err)
		}
	}
	return nil
}

// Lookup returns the entry name, or an error wrapping ErrNotAllowed that
// names it.
func (c Commands) Lookup(name string) (Command, error) {
	cmd, ok := c[name]
	if !ok {
		return Command{}, fmt.Errorf("command %q: %w", clip(name), ErrNotAllowed)
	}
	return cmd, nil
}

// Names returns the entry names, sorted.
func (c Commands) Names() []string { return slices.Sorted(maps.Keys(c)) }

// Load reads the allow-list file at path (Parse). An empty path is the
// empty allow-list.
func Load(path string) (Commands, error) {
	if path == "" {
		return Commands{}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load stdio commands %s: %w", path, err)
	}
	defer f.Close()
	data := make([]byte, MaxFile+1)
	n, err := readFull(f, data)
	if err != nil {
		return nil, fmt.Errorf("load stdio commands %s: %w", path, err)
	}
	if n > MaxFile {
		return nil, fmt.Errorf("load stdio commands %s: %w: over %d bytes", path, ErrInvalid, MaxFile)
	}
	cmds, err := Parse(data[:n])
	if err != nil {
		return nil, fmt.Errorf("load stdio commands %s: %w", path, err)
	}
	return cmds, nil
}

func readFull(f *os.File, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return n, err
			}
			break // io.EOF, or an error the next read would repeat
		}
	}
	return n, nil
}

// Parse reads an allow-list: a YAML mapping of entry names to either the
// argv (a sequence of strings) or a mapping {argv: [...], env: {NAME:
// value or {env: X} or {file: /p}}}. Everything is bounded (MaxFile,
// MaxEntries, MaxArgs, MaxArg, MaxEnv, MaxValue); aliases, tags other than
// strings, and unknown keys are refused. An empty document is the empty
// allow-list.
func Parse(data []byte) (Commands, error) {
	if len(data) > MaxFile {
		return nil, fmt.Errorf("%w: over %d bytes", ErrInvalid, MaxFile)
	}
	out := Commands{}
	if len(bytes.TrimSpace(data)) == 0 {
		return out, nil
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: yaml: %v", ErrInvalid, clipErr(err))
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("%w: more than one YAML document", ErrInvalid)
	}
	if doc.Kind == 0 {
		return out, nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("%w: want one mapping of entry names", ErrInvalid)
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null" {
		return out, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: line %d: want a mapping of entry names to commands", ErrInvalid, root.Line)
	}
	if len(root.Content)/2 > MaxEntries {
		return nil, fmt.Errorf("%w: %d entries, limit %d", ErrInvalid, len(root.Content)/2, MaxEntries)
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if err := plainString(k); err != nil {
			return nil, fmt.Errorf("%w: line %d: entry name: %v", ErrInvalid, k.Line, err)
		}
		if err := CheckName(k.Value); err != nil {
			return nil, fmt.Errorf("line %d: %w", k.Line, err)
		}
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("%w: line %d: entry %q defined twice", ErrInvalid, k.Line, k.Value)
		}
		cmd, err := entry(v)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", k.Value, err)
		}
		out[k.Value] = cmd
	}
	return out, nil
}

func entry(v *yaml.Node) (Command, error) {
	var cmd Command
	switch v.Kind {
	case yaml.SequenceNode:
		argv, err := stringList(v)
		if err != nil {
			return cmd, err
		}
		cmd.Argv = argv
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := v.Content[i], v.Content[i+1]
			if err := plainString(k); err != nil {
				return cmd, fmt.Errorf("%w: line %d: key: %v", ErrInvalid, k.Line, err)
			}
			switch k.Value {
			case "argv":
				if cmd.Argv != nil {
					return cmd, fmt.Errorf("%w: line %d: argv given twice", ErrInvalid, k.Line)
				}
				argv, err := stringList(val)
				if err != nil {
					return cmd, err
				}
				cmd.Argv = argv
			case "env":
				if cmd.Env != nil {
					return cmd, fmt.Errorf("%w: line %d: env given twice", ErrInvalid, k.Line)
				}
				env, err := envValues(val)
				if err != nil {
					return cmd, err
				}
				cmd.Env = env
			default:
				return cmd, fmt.Errorf("%w: line %d: unknown key %q (want argv or env)", ErrInvalid, k.Line, clip(k.Value))
			}
		}
	default:
		return cmd, fmt.Errorf("%w: line %d: want the argv (a list of strings) or {argv: [...], env: {...}}", ErrInvalid, v.Line)
	}
	if len(cmd.Argv) == 0 || cmd.Argv[0] == "" {
		return cmd, fmt.Errorf("%w: line %d: argv must name a program", ErrInvalid, v.Line)
	}
	return cmd, nil
}

func stringList(v *yaml.Node) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%w: line %d: want a list of strings", ErrInvalid, v.Line)
	}
	if len(v.Content) > MaxArgs {
		return nil, fmt.Errorf("%w: line %d: %d arguments, limit %d", ErrInvalid, v.Line, len(v.Content), MaxArgs)
	}
	out := make([]string, 0, len(v.Content))
	for _, n := range v.Content {
		if err := plainString(n); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrInvalid, n.Line, err)
		}
		if len(n.Value) > MaxArg || bytesIndexNUL(n.Value) {
			return nil, fmt.Errorf("%w: line %d: an argument has at most %d bytes and no NUL", ErrInvalid, n.Line, MaxArg)
		}
		out = append(out, n.Value)
	}
	return out, nil
}

func envValues(v *yaml.Node) (map[string]Value, error) {
	if v.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: line %d: env: want a mapping of variable names", ErrInvalid, v.Line)
	}
	if len(v.Content)/2 > MaxEnv {
		return nil, fmt.Errorf("%w: line %d: %d variables, limit %d", ErrInvalid, v.Line, len(v.Content)/2, MaxEnv)
	}
	out := map[string]Value{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if err := plainString(k); err != nil || !envPattern.MatchString(k.Value) {
			return nil, fmt.Errorf("%w: line %d: env: want a variable name [A-Za-z_][A-Za-z0-9_]{0,127}", ErrInvalid, k.Line)
		}
		if _, dup := out[k.Value]; dup {
			return nil, fmt.Errorf("%w: line %d: env %s set twice", ErrInvalid, k.Line, k.Value)
		}
		var value Value
		switch val.Kind {
		case yaml.ScalarNode:
			if t := val.ShortTag(); t != "!!str" && t != "!!int" && t != "!!bool" && t != "!!float" {
				return nil, fmt.Errorf("%w: line %d: env %s: want a string", ErrInvalid, val.Line, k.Value)
			}
			if len(val.Value) > MaxValue || bytesIndexNUL(val.Value) {
				return nil, fmt.Errorf("%w: line %d: env %s: at most %d bytes, no NUL", ErrInvalid, val.Line, k.Value, MaxValue)
			}
			value.Literal = val.Value
		case yaml.MappingNode:
			if len(val.Content) != 2 {
				return nil, fmt.Errorf("%w: line %d: env %s: want {env: NAME} or {file: /path}", ErrInvalid, val.Line, k.Value)
			}
			rk, rv := val.Content[0], val.Content[1]
			if plainString(rk) != nil || plainString(rv) != nil {
				return nil, fmt.Errorf("%w: line %d: env %s: want {env: NAME} or {file: /path}", ErrInvalid, val.Line, k.Value)
			}
			switch rk.Value {
			case "env":
				value.Ref.Env = rv.Value
			case "file":
				value.Ref.File = rv.Value
			default:
				return nil, fmt.Errorf("%w: line %d: env %s: want {env: NAME} or {file: /path}", ErrInvalid, val.Line, k.Value)
			}
			if err := value.Ref.Validate(); err != nil {
				return nil, fmt.Errorf("line %d: env %s: %w", val.Line, k.Value, err)
			}
		default:
			return nil, fmt.Errorf("%w: line %d: env %s: want a string or {env: NAME} or {file: /path}", ErrInvalid, val.Line, k.Value)
		}
		out[k.Value] = value
	}
	return out, nil
}

// plainString accepts a scalar string node: no alias, no anchor games, no
// other type.
func plainString(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errors.New("want a string")
	}
	if t := n.ShortTag(); t != "!!str" {
		return fmt.Errorf("want a string, got %s", strings.TrimPrefix(t, "!!"))
	}
	return nil
}

func bytesIndexNUL(s string) bool { return strings.IndexByte(s, 0) >= 0 }

// clip bounds a name quoted in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

func clipErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
