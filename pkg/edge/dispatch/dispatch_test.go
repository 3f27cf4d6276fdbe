package dispatch

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/fleetgate/fleetgate/pkg/edge/admission"
)

// routeCase is one case of testdata/routes.json: a request's facts and
// body, and the route it must take.
type routeCase struct {
	Name          string `json:"name"`
	Method        string `json:"method"`
	Stateless     bool   `json:"stateless"`
	MCPMethod     string `json:"mcp_method"`
	Body          string `json:"body"`
	SessionID     bool   `json:"session_id"`
	ValidID       bool   `json:"valid_id"`
	Held          string `json:"held"`
	Store         bool   `json:"store"`
	Owner         bool   `json:"owner"`
	OwnedStream   bool   `json:"owned_stream"`
	FastSession   bool   `json:"fast_session"`
	TaskSession   bool   `json:"task_session"`
	FastStateless bool   `json:"fast_stateless"`
	EdgeListen    bool   `json:"edge_listen"`
	Route         string `json:"route"`
}

func (c routeCase) facts(t *testing.T) Facts {
	f := Facts{Method: c.Method, Stateless: c.Stateless, MCPMethod: c.MCPMethod, SessionID: c.SessionID,
		SessionIDValid: c.ValidID, Store: c.Store, Owner: c.Owner, OwnedStream: c.OwnedStream, FastSession: c.FastSession,
		TaskSession: c.TaskSession, FastStateless: c.FastStateless, EdgeListen: c.EdgeListen}
	switch c.Held {
	case "":
	case "pending":
		f.Held = Pending
	case "live":
		f.Held = Live
	default:
		t.Fatalf("held %q", c.Held)
	}
	if c.Body != "" {
		b, err := admission.ParseBody([]byte(c.Body), admission.DefaultMaxBatch, "")
		if err != nil {
			t.Fatalf("body refused by the gate: %v", err)
		}
		f.Body = b
	}
	return f
}

func TestRoute(t *testing.T) {
	data, err := os.ReadFile("testdata/routes.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []routeCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	seen := map[Kind]bool{}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			want, ok := Parse(c.Route)
			if !ok {
				t.Fatalf("route %q is none", c.Route)
			}
			if got := Route(c.facts(t)); got != want {
				t.Fatalf("route %s, want %s", got, want)
			}
			seen[want] = true
		})
	}
	for k := Kind(1); k.String() != "invalid"; k++ {
		if !seen[k] {
			t.Errorf("no case routes to %s", k)
		}
	}
	t.Logf("%d cases", len(cases))
}

func TestLaneRoutes(t *testing.T) {
	for k := Kind(1); k.String() != "invalid"; k++ {
		if Lane(k) != (k == Call || k == StatelessCall) {
			t.Errorf("lane serves %s: %v", k, Lane(k))
		}
		if p, ok := Parse(k.String()); !ok || p != k {
			t.Errorf("Parse(%q) = %v %v", k.String(), p, ok)
		}
	}
}
