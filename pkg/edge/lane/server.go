package lane

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/internal/h1"
)

// Edge is what a lane asks of the edge whose connections it serves: the
// same checks, gate and route the edge's http.Server handler runs.
type Edge interface {
	// Authenticate checks r's bearer token (on its head); a refusal is
	// answered with Refuse.
	Authenticate(r *http.Request) (*http.Request, *admission.Refusal)
	// Admit runs the admission gate and the route of r (its body read
	// whole): answer answers it on the lane (false: it is the server's
	// after all), release gives back its call slots once the call
	// returned. A nil answer and refusal hands r back to the server; a
	// refusal is answered on the lane.
	Admit(r *http.Request) (answer func(http.ResponseWriter, *http.Request) bool, release func(), refusal *admission.Refusal)
	// Refuse writes refusal f.
	Refuse(w http.ResponseWriter, r *http.Request, f *admission.Refusal)
	// Posting counts requests in progress (shutdown's drain waits for them).
	Posting(delta int64)
	// Body is a body read whole, as the edge's handler takes it.
	Body(b []byte) io.ReadCloser
}

// Options configure a Server. Edge and Hijacks are required.
type Options struct {
	Edge    Edge
	Hijacks *h1.Hijacks // owns the lanes' goroutines
	// Addr is the MCP listener's address (the hand-back listener's).
	Addr net.Addr
	// The server's timeouts, applied on lanes as the server applies them.
	HeaderTimeout, BodyTimeout, IdleTimeout, ShutdownTimeout time.Duration
	// Disabled: no connection becomes a lane.
	Disabled bool
	// MaxBody bounds a request body a lane reads (0: 4 MiB, the go-sdk's).
	MaxBody  int64
	Registry prometheus.Registerer
}

// Server serves call lanes: keep-alive connections whose plain calls the
// edge answers itself (lane.go).
type Server struct {
	o          Options
	handback   *laneHandback
	mu         sync.Mutex
	lanes      map[*callLane]struct{}
	shut       atomic.Bool // shutdown began: lanes close when idle
	lanesGauge prometheus.Gauge
	handbacks  prometheus.Counter
}

// New returns a Server with options o.
func New(o Options) *Server {
	if o.MaxBody <= 0 {
		o.MaxBody = 4 << 20
	}
	s := &Server{o: o, handback: newLaneHandback(o.Addr), lanes: map[*callLane]struct{}{},
		lanesGauge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "fleetgate_edge_call_lanes",
			Help: "Keep-alive client connections whose tools/call requests the edge answers without net/http's server (call lanes)."}),
		handbacks: prometheus.NewCounter(prometheus.CounterOpts{Name: "fleetgate_edge_call_lane_handbacks_total",
			Help: "Requests on call lanes given back to net/http's server (not a plain tools/call)."})}
	if o.Registry != nil {
		o.Registry.MustRegister(s.lanesGauge, s.handbacks)
	}
	return s
}

// Listener is where the server gets the connections lanes give back: the
// edge's http.Server serves it besides its own listener.
func (s *Server) Listener() net.Listener { return s.handback }

// ConnContext is the http.Server's ConnContext: it makes a given-back
// connection known to its requests.
func (s *Server) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return laneConnContext(ctx, c)
}

// Handler wraps the edge's MCP handler (counting plain calls in a row on
// given-back connections).
func (s *Server) Handler(h http.Handler) http.Handler { return countStreaks(h) }

// Eligible reports whether the connection of r may become a lane after
// its response (then the response is written to a Writer and given to
// Run).
func (s *Server) Eligible(r *http.Request) bool {
	return s.laneable(r) && replayConnOf(r).mayLane() && !s.shut.Load()
}

// Keeps reports whether a lane could serve r at all (a call lane reads
// the rest of such a request itself).
func (s *Server) Keeps(r *http.Request) bool { return laneCandidate(r) && s.laneable(r) }

// PlainCall notes a plain call the server answered on r's connection
// (one not made a lane).
func (s *Server) PlainCall(r *http.Request) { replayConnOf(r).plainCall() }

// NewWriter is the writer of a response that may make its connection a lane.
func NewWriter() *Writer { return &Writer{header: make(http.Header, 1)} }

// Closings is where a call on a lane leaves the backend bodies it closes
// after its response (nil for any other writer).
func Closings(w http.ResponseWriter) *backend.Closings {
	if lw, ok := w.(*Writer); ok {
		return lw.later
	}
	return nil
}

// CallCancel is the cancel function of the context of a call answered on
// a lane (the request's own: the lane made it for this call alone and
// ends it after the response), so that the call need not derive another
// to be cancellable; nil for any other writer.
func CallCancel(w http.ResponseWriter) context.CancelFunc {
	if lw, ok := w.(*Writer); ok {
		return lw.cancel
	}
	return nil
}

// Metrics are the lanes open and the requests given back.
func (s *Server) Metrics() (lanes prometheus.Gauge, handbacks prometheus.Counter) {
	return s.lanesGauge, s.handbacks
}

// Open is the number of lanes open.
func (s *Server) Open() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lanes)
}

// ShutBegun reports whether Close was called (no new lane starts).
func (s *Server) ShutBegun() bool { return s.shut.Load() }

// Wrapped counts the lanes that read their connection through a wrapper
// (a connection given back before): a lane made again reads the
// connection itself, so wrappers do not pile up.
func (s *Server) Wrapped() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for l := range s.lanes {
		if _, ok := l.conn.(*replayConn); ok {
			n++
		}
	}
	return n
}
