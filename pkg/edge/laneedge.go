package edge

import (
	"io"
	"net/http"
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
	"github.com/fleetgate/fleetgate/pkg/edge/dispatch"
)

// edgeForLanes is the edge as call lanes (package lane) see it: the same
// authentication, gate and route as the server's handler.
type edgeForLanes struct{ e *Edge }

func (l edgeForLanes) Authenticate(r *http.Request) (*http.Request, *admission.Refusal) {
	return l.e.bearer.Authenticate(r)
}

func (l edgeForLanes) Admit(r *http.Request) (func(http.ResponseWriter, *http.Request) bool, func(), *admission.Refusal) {
	d, ok := l.e.admitLane(r)
	if !ok {
		return nil, nil, nil // refused: the server's handler answers it
	}
	answer := l.answer(r, d)
	if answer == nil {
		return nil, nil, nil
	}
	release, f := l.e.limitRequest(r, d.Identity, d.Body)
	if f != nil {
		return nil, noRelease, f
	}
	return answer, release, nil
}

func (l edgeForLanes) Refuse(w http.ResponseWriter, r *http.Request, f *admission.Refusal) {
	l.e.refuse(w, r, f)
}

func (l edgeForLanes) Posting(delta int64) { l.e.posting.Add(delta) }

func (l edgeForLanes) Body(b []byte) io.ReadCloser { return newWholeBody(b) }

// answer returns what answers a lane request admitted as d: the
// request's route, when a lane serves it (dispatch.Lane), by the same
// facts the server's handler gathers; nil sends the request back to the
// server, which routes it again.
func (l edgeForLanes) answer(r *http.Request, d admission.Decision) func(http.ResponseWriter, *http.Request) bool {
	e := l.e
	if !e.lanes.Keeps(r) {
		return nil
	}
	f, s := e.facts(r, &admitted{body: d.Body, ident: d.Identity})
	switch k := dispatch.Route(f); k {
	case dispatch.StatelessCall:
		e.routes.seen(k, true)
		return func(w http.ResponseWriter, r *http.Request) bool {
			return e.answers.StatelessCall(w, r, r.Body.(*wholeBody).data, d.Identity)
		}
	case dispatch.Call:
		e.routes.seen(k, true)
		return func(w http.ResponseWriter, r *http.Request) bool {
			e.recs.Touched(s, time.Now())
			return e.answers.SessionCall(w, r, s, d.Identity)
		}
	}
	return nil
}
