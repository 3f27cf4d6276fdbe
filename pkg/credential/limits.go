package credential

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
)

// Bounds of what a reference may name. A reference reads whatever file or
// variable it names and sends it to a backend, so the process that accepts
// references (the controller, from its config file) limits them to a
// directory and a variable name prefix its operator sets.

// DefaultDir is the directory file references must lie under unless the
// operator sets another (Docker and Compose mount secrets there).
const DefaultDir = "/run/secrets"

// OwnEnvPrefix begins the gateway's own settings (FLEETGATE_<FLAG>, the
// admin token of its clients): no reference may name one, unless the
// operator's prefix is a longer one (FLEETGATE_CRED_).
const OwnEnvPrefix = "FLEETGATE_"

// forbiddenDirs are never readable through a reference, whatever the
// directory: the pod's service account token lives there.
var forbiddenDirs = []string{"/run/secrets/kubernetes.io", "/var/run/secrets/kubernetes.io"}

// ErrOutOfBounds is matched by every refusal of Limits.Check.
var ErrOutOfBounds = errors.New("credential reference out of bounds")

// Limits bound the files and environment variables references may name.
// The zero value allows any file and any variable but the gateway's own.
type Limits struct {
	// Dir, when not empty, is the absolute directory every file reference
	// must lie under (the path, and the file it leads to when it is a
	// symbolic link that exists).
	Dir string
	// EnvPrefix, when not empty, begins every variable a reference names.
	EnvPrefix string
}

// Validate checks the limits themselves: Dir absolute and clean, EnvPrefix
// characters of a variable name and not a prefix of OwnEnvPrefix (which
// would let references read the gateway's own settings).
func (l Limits) Validate() error {
	if l.Dir != "" && (!filepath.IsAbs(l.Dir) || filepath.Clean(l.Dir) != l.Dir || len(l.Dir) > MaxPath) {
		return fmt.Errorf("credential directory %q: want an absolute, clean path", l.Dir)
	}
	if l.EnvPrefix != "" {
		if !envName(l.EnvPrefix) {
			return fmt.Errorf("credential variable prefix %q: want the start of a variable name ([A-Za-z_][A-Za-z0-9_]*)", l.EnvPrefix)
		}
		if strings.HasPrefix(OwnEnvPrefix, l.EnvPrefix) {
			return fmt.Errorf("credential variable prefix %q: would allow the gateway's own %s* variables; use a longer one (e.g. %sCRED_)", l.EnvPrefix, OwnEnvPrefix, OwnEnvPrefix)
		}
	}
	return nil
}

// Check reports whether r (a valid reference) lies within the limits. Its
// errors name the reference and the bound, match ErrOutOfBounds, and never
// quote a value.
func (l Limits) Check(r Ref) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if r.Env != "" {
		if l.EnvPrefix != "" && !strings.HasPrefix(r.Env, l.EnvPrefix) {
			return fmt.Errorf("%w: %s: the variable does not begin with the allowed prefix %s", ErrOutOfBounds, r, l.EnvPrefix)
		}
		if strings.HasPrefix(r.Env, OwnEnvPrefix) && !(len(l.EnvPrefix) > len(OwnEnvPrefix) && strings.HasPrefix(l.EnvPrefix, OwnEnvPrefix)) {
			return fmt.Errorf("%w: %s: %s* variables are the gateway's own settings", ErrOutOfBounds, r, OwnEnvPrefix)
		}
		return nil
	}
	if !l.fileOK(r.File) {
		return fmt.Errorf("%w: %s: the file is not under the allowed directory %s", ErrOutOfBounds, r, l.dirText())
	}
	// A symbolic link that leads out of the directory: refused too (a
	// file that does not exist yet is checked by its path only).
	if real, err := filepath.EvalSymlinks(r.File); err == nil && real != r.File {
		dir := l.Dir
		if dir != "" {
			if d, err := filepath.EvalSymlinks(dir); err == nil {
				dir = d
			}
		}
		if !(Limits{Dir: dir}).fileOK(real) {
			return fmt.Errorf("%w: %s: the file is a link that leads out of the allowed directory %s", ErrOutOfBounds, r, l.dirText())
		}
	}
	return nil
}

func (l Limits) dirText() string {
	if l.Dir == "" {
		return "/"
	}
	return l.Dir
}

// fileOK reports whether the clean absolute path p is under l.Dir and
// under none of forbiddenDirs.
func (l Limits) fileOK(p string) bool {
	for _, d := range forbiddenDirs {
		if within(p, d) {
			return false
		}
	}
	return l.Dir == "" || within(p, l.Dir)
}

// within reports whether p lies strictly under dir.
func within(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// Origin returns the origin of an absolute http or https URL:
// "scheme://host:port", scheme and host lower-cased, the port explicit
// (80 and 443 by default). Its error quotes nothing of the URL.
func Origin(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("origin: want an absolute http(s) URL")
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	return scheme + "://" + net.JoinHostPort(host, port), nil
}
