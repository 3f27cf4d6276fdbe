package stdio

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/fleetgate/fleetgate/pkg/credential"
)

// DefaultMaxProcesses bounds the stdio processes of one host.
const DefaultMaxProcesses = 32

// ErrProcessCap is the failed start of a process over the host's cap.
var ErrProcessCap = errors.New("stdio process cap reached")

// Spec is a stdio backend as a fleet config, admin call or event gives it:
// an entry name of the allow-list, extra arguments and variables (only
// references).
type Spec struct {
	Backend string
	Command string
	Args    []string
	Env     map[string]credential.Ref
}

// Equal reports whether s and o run the same process.
func (s Spec) Equal(o Spec) bool {
	return s.Backend == o.Backend && s.Command == o.Command && slices.Equal(s.Args, o.Args) && maps.Equal(s.Env, o.Env)
}

// HostOptions configure a Host. Zero fields take defaults.
type HostOptions struct {
	// MaxProcesses caps the processes running at once on the host
	// (default DefaultMaxProcesses); a start over it fails with
	// ErrProcessCap and is retried with backoff.
	MaxProcesses int
	// Policy is the supervision policy of every instance.
	Policy Policy
	// MaxMessage bounds one message from a process (default 16 MiB).
	MaxMessage int
	// Logger receives the processes' stderr and the supervision; nil:
	// nothing.
	Logger *zerolog.Logger
	// Metrics; nil records nothing.
	Metrics *Metrics
	// Client is the MCP client the sessions are made with (nil: one
	// named fleetgate-stdio).
	Client *mcp.Client
}

// Host is one binary's stdio processes: its allow-list, the process cap
// and what every instance shares.
type Host struct {
	cmds Commands
	o    HostOptions
	log  zerolog.Logger

	mu      sync.Mutex
	running int
}

// NewHost returns a Host running only entries of cmds.
func NewHost(cmds Commands, o HostOptions) *Host {
	if o.MaxProcesses <= 0 {
		o.MaxProcesses = DefaultMaxProcesses
	}
	if o.MaxMessage <= 0 {
		o.MaxMessage = 16 << 20
	}
	o.Policy = o.Policy.WithDefaults()
	if o.Client == nil {
		o.Client = mcp.NewClient(&mcp.Implementation{Name: "fleetgate-stdio", Version: "0.1.0"}, nil)
	}
	h := &Host{cmds: cmds, o: o, log: zerolog.Nop()}
	if o.Logger != nil {
		h.log = *o.Logger
	}
	return h
}

// Commands returns the host's allow-list.
func (h *Host) Commands() Commands { return h.cmds }

// Check refuses a spec whose command is not in the host's allow-list, or
// whose args or env are malformed.
func (h *Host) Check(s Spec) error {
	if err := CheckName(s.Command); err != nil {
		return fmt.Errorf("stdio backend %q: %w", s.Backend, err)
	}
	if _, err := h.cmds.Lookup(s.Command); err != nil {
		return fmt.Errorf("stdio backend %q: %w", s.Backend, err)
	}
	if err := CheckArgs(s.Args); err != nil {
		return fmt.Errorf("stdio backend %q: %w", s.Backend, err)
	}
	if err := CheckEnv(s.Env); err != nil {
		return fmt.Errorf("stdio backend %q: %w", s.Backend, err)
	}
	return nil
}

// acquire takes a process slot.
func (h *Host) acquire() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running >= h.o.MaxProcesses {
		return false
	}
	h.running++
	return true
}

func (h *Host) release() {
	h.mu.Lock()
	h.running--
	h.mu.Unlock()
}

// Running returns the processes running now.
func (h *Host) Running() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running
}

// Metrics are the stdio collectors of one binary, labelled by backend. A
// nil *Metrics records nothing.
type Metrics struct {
	restarts *prometheus.CounterVec
	up       *prometheus.GaugeVec
	refused  *prometheus.CounterVec
}

// NewMetrics creates the collectors and registers them on reg (nil: not
// registered).
//
//	fleetgate_stdio_restarts_total{backend}      processes started again after the first
//	fleetgate_stdio_up{backend}                  1 while the instance's session is up
//	fleetgate_stdio_down_calls_total{backend}    calls answered with an error because the instance was down
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_stdio_restarts_total",
			Help: "stdio backend processes started again after the first, by backend."}, []string{"backend"}),
		up: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "fleetgate_stdio_up",
			Help: "1 while this binary's instance of a stdio backend is up (its MCP session initialized)."}, []string{"backend"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "fleetgate_stdio_down_calls_total",
			Help: "Calls to a stdio backend answered with an error because this binary's instance was down."}, []string{"backend"}),
	}
	if reg != nil {
		reg.MustRegister(m.restarts, m.up, m.refused)
	}
	return m
}

func (m *Metrics) restart(b string) {
	if m != nil {
		m.restarts.WithLabelValues(b).Inc()
	}
}

func (m *Metrics) setUp(b string, up bool) {
	if m != nil {
		v := 0.0
		if up {
			v = 1
		}
		m.up.WithLabelValues(b).Set(v)
	}
}

func (m *Metrics) downCall(b string) {
	if m != nil {
		m.refused.WithLabelValues(b).Inc()
	}
}

func (m *Metrics) forget(b string) {
	if m != nil {
		m.up.DeleteLabelValues(b)
	}
}
