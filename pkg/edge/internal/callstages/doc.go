// Package callstages times the stages of a tools/call answered on a call
// lane, in benchmark builds only (build tag benchprofile): where, between
// the request's head and its response's last byte, an edge process spends
// the wall time of a call. A release build compiles every function here to
// nothing.
//
// With FLEETGATE_BENCH_STAGES naming a file, every Window calls the edge
// appends one line to it: the mean wall time of each stage, in µs, e.g.
//
//	go build -tags benchprofile -o /tmp/edge-prof ./cmd/edge
//	FLEETGATE_BENCH_STAGES=/tmp/stages.txt FLEETGATE_BENCH_EDGE_BIN=/tmp/edge-prof \
//	  go test -run '^$' -bench '^BenchmarkCallOverheadProcess$' -benchtime 6000x ./test/
//
// A stage is the time from the previous mark reached to its own. The
// record is one per process: the benchmark sends one call at a time, and
// calls that overlap are not timed (the second Begin drops the first).
//
//	callstages.Begin()               // a request's first bytes arrived on a lane
//	callstages.Mark(callstages.Authenticated)
//	...
//	callstages.End()                 // its response written
package callstages

// Stage names a mark on a call's way through the edge, in the order a
// call answered on a lane reaches them.
type Stage int

const (
	begun         Stage = iota
	HeadRead            // the request's head read and parsed (its bytes had arrived)
	Authenticated       // the bearer token checked (package bearer)
	Admitted            // the gate, the limits and the route decided
	Started             // the call plane has the call (session, identity, relay)
	Routed              // routed and visible: the backend call begins
	Sending             // the backend request built: written next
	Answered            // the backend's response read and checked
	Forwarded           // back in the call plane, before the call trail
	Recorded            // the call trail's entry queued
	Built               // the client's response built
	written             // the response written (End)
	stages
)

var names = [stages]string{"begun", "head", "authenticated", "admitted", "started", "routed", "sending",
	"answered", "forwarded", "recorded", "built", "written"}

// Window is how many timed calls each line of FLEETGATE_BENCH_STAGES
// averages.
const Window = 1000
