package stdio

import (
	"flag"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Flags are the stdio flags of the controller and the edge.
type Flags struct {
	Commands     string
	MaxProcesses int
	Grace        time.Duration
}

// Register adds --stdio-commands, --stdio-max-processes and --stdio-grace
// to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Commands, "stdio-commands", "", "YAML map of allow-listed stdio commands (name: [argv...]); empty: no stdio backends on this host")
	fs.IntVar(&f.MaxProcesses, "stdio-max-processes", DefaultMaxProcesses, "most stdio backend processes running at once on this host")
	fs.DurationVar(&f.Grace, "stdio-grace", DefaultGrace, "wait between SIGTERM and SIGKILL when a stdio process is stopped")
}

// Host loads the allow-list and makes the host's runner (metrics on reg);
// maxBackoff caps the restart backoff (the probe interval).
func (f *Flags) Host(log *zerolog.Logger, reg prometheus.Registerer, maxBackoff time.Duration) (*Host, error) {
	cmds, err := Load(f.Commands)
	if err != nil {
		return nil, fmt.Errorf("flag -stdio-commands: %w", err)
	}
	if log != nil && len(cmds) > 0 {
		log.Info().Strs("stdio_commands", cmds.Names()).Msg("stdio allow-list loaded")
	}
	return NewHost(cmds, HostOptions{MaxProcesses: f.MaxProcesses, Logger: log, Metrics: NewMetrics(reg),
		Policy: Policy{Grace: f.Grace, MaxBackoff: maxBackoff}}), nil
}
