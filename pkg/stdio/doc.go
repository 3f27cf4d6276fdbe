// Package stdio runs MCP servers that speak over stdin/stdout ("stdio
// backends"): the host's allow-list of commands (Commands, read from the
// file of --stdio-commands), a pure Supervisor state machine per instance
// (restart with backoff, restarts per minute capped, SIGTERM then SIGKILL
// on stop), and the Instance that drives it with real processes and one
// MCP client session to each.
//
// A fleet config, an admin call or an event names only an entry of the
// allow-list and extra arguments: no outside party can choose the program a
// host runs. Each process runs in its own process group with Pdeathsig
// SIGKILL (it dies with its host), with a clean environment (PATH and HOME
// of the host, then the entry's and the backend's variables), its stdout
// bounded per message (size and depth) and its stderr logged a bounded
// line at a time at a bounded rate.
//
// The driving loop of a caller:
//
//	cmds, err := stdio.Load(path)
//	host := stdio.NewHost(cmds, stdio.HostOptions{MaxProcesses: 32, Logger: &log})
//	inst, err := host.Instance(stdio.Spec{Backend: "files", Command: "filesystem", Args: []string{"/srv"}})
//	go inst.Run(ctx)               // returns once its process is gone
//	cs, err := inst.Session(ctx)   // the one MCP session, shared
package stdio
