package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/catalog/fromstate"
	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/naming"
)

// maxAdminBody bounds admin request bodies.
const maxAdminBody = 64 << 10

// StateJSON is GET /v1/state.
type StateJSON struct {
	Generation uint64      `json:"generation"`
	Leader     bool        `json:"leader"`
	Groups     []GroupJSON `json:"groups"`
	// Authorization is the tool policy in force and the generation it
	// took effect at.
	Authorization AuthorizationJSON `json:"authorization"`
}

// GroupJSON is one group of StateJSON.
type GroupJSON struct {
	Name     string        `json:"name"`
	Backends []BackendJSON `json:"backends"`
	// Naming is the group's naming in force (package naming).
	Naming NamingJSON `json:"naming"`
	// Collisions are the exposed names two or more definitions asked
	// for, and how each was settled; empty when there are none.
	Collisions []CollisionJSON `json:"collisions"`
}

// BackendJSON is one backend of StateJSON. Status is the live status on
// the leader and the last published one elsewhere; Advertisable is what
// the fleet has been told.
type BackendJSON struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Transport string `json:"transport"`
	// Headers are the references of the backend's header values (never
	// the values); AllowLinkLocal is shown when true.
	Headers        credential.Headers `json:"headers,omitempty"`
	AllowLinkLocal bool               `json:"allow_link_local,omitempty"`
	// Auth is the backend's auth section (references only).
	Auth         *credential.Auth `json:"auth,omitempty"`
	Status       string           `json:"status"`
	Reason       string           `json:"reason,omitempty"`
	Advertisable bool             `json:"advertisable"`
	Tools        []string         `json:"tools"`
	Digest       string           `json:"digest"`
	Generation   uint64           `json:"generation"`
}

// ViewJSON is GET /v1/groups/{group}/view.
type ViewJSON struct {
	// Generation is the log's generation; on a controller merging the
	// regions' logs (Options.Regions), the sum of Regions (an order, not
	// a log position).
	Generation uint64            `json:"generation"`
	Regions    map[string]uint64 `json:"regions,omitempty"`
	// Digest is the generation's one catalog digest (catalog.ViewDigest):
	// of Tools, or for a view whose eras are served different tools, of
	// both eras' digests (Eras).
	Digest string            `json:"digest"`
	Tools  []json.RawMessage `json:"tools"`
	// Eras is set for a view whose eras are served different tools:
	// Tools are what the session-based revisions are served, Eras says
	// each era's digest and the tools of the stateless generation.
	Eras *ViewErasJSON `json:"eras,omitempty"`
}

// ViewErasJSON is the era section of a view served differently by era:
// Digest of ViewJSON is catalog.EraDigest(Session.Digest, Stateless.Digest).
type ViewErasJSON struct {
	Session   EraJSON `json:"session"`
	Stateless EraJSON `json:"stateless"`
}

// EraJSON is one era's tools and their digest (Tools omitted for the
// session era: ViewJSON.Tools).
type EraJSON struct {
	Digest string            `json:"digest"`
	Tools  []json.RawMessage `json:"tools,omitempty"`
}

// Handler returns the admin API. gatherer serves /metrics (nil: the
// default gatherer).
func (c *Controller) Handler(gatherer prometheus.Gatherer) http.Handler {
	if gatherer == nil {
		gatherer = prometheus.DefaultGatherer
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/state", c.getState)
	mux.HandleFunc("PUT /v1/groups/{group}/backends/{name}", c.putBackend)
	mux.HandleFunc("DELETE /v1/groups/{group}/backends/{name}", c.deleteBackend)
	mux.HandleFunc("POST /v1/groups/{group}/backends/{name}/refresh", c.refreshBackend)
	mux.HandleFunc("POST /v1/refresh", c.refreshAll)
	mux.HandleFunc("GET /v1/groups/{group}/view", c.getView)
	mux.HandleFunc("GET /v1/events", c.getEvents)
	mux.HandleFunc("GET /v1/authorization", c.getAuthorization)
	mux.HandleFunc("PUT /v1/authorization", c.putAuthorization)
	mux.HandleFunc("DELETE /v1/authorization", c.deleteAuthorization)
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !c.reader.CaughtUp() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "catching up with the event log"})
			return
		}
		writeJSON(w, 200, map[string]any{"status": "ready", "leader": c.Leading()})
	})
	return mux
}

func (c *Controller) getState(w http.ResponseWriter, _ *http.Request) {
	s := c.reader.State()
	c.mu.Lock()
	live := c.statuses
	leading := c.leading
	c.mu.Unlock()
	out := StateJSON{Generation: s.Generation, Leader: leading, Groups: []GroupJSON{}, Authorization: authorizationOf(s)}
	for _, gname := range s.GroupNames() {
		g := s.Groups[gname]
		gj := GroupJSON{Name: gname, Backends: []BackendJSON{}, Collisions: collisionsJSON(c.groupView(s, gname).Collisions)}
		if g.Naming != nil {
			gj.Naming = NamingJSON{Generation: g.Naming.Generation, Spec: g.Naming.Spec}
		}
		for _, bname := range g.BackendNames() {
			b := g.Backends[bname]
			bj := BackendJSON{Name: b.Name, URL: b.Config.URL, Transport: b.Config.Transport,
				Headers: b.Config.Headers, AllowLinkLocal: b.Config.AllowLinkLocal, Auth: b.Config.Auth, Status: b.Status,
				Reason: b.Reason, Advertisable: b.Advertisable, Tools: []string{}, Generation: b.Generation}
			// The live status, unless the log withdrew the backend because
			// its catalog is too large for an event: the fleet serves
			// that, whatever the probes say.
			if ls, ok := live[BackendKey{gname, bname}]; ok && !strings.HasPrefix(b.Reason, events.ReasonTooLarge) {
				bj.Status, bj.Reason = string(ls.status), ls.reason
			}
			if b.Catalog != nil {
				bj.Tools, bj.Digest = b.Catalog.ToolNames(), b.Catalog.Digest
			}
			gj.Backends = append(gj.Backends, bj)
		}
		out.Groups = append(out.Groups, gj)
	}
	writeJSON(w, 200, out)
}

// putBody is the body of PUT /v1/groups/{group}/backends/{name}. Header
// values are references ({"env": NAME} or {"file": PATH}), read by
// config.ParseHeadersJSON.
type putBody struct {
	URL            string                     `json:"url"`
	Transport      string                     `json:"transport"`
	Headers        map[string]json.RawMessage `json:"headers"`
	AllowLinkLocal bool                       `json:"allow_link_local"`
	// Command, Args and Env are a stdio backend's: an entry name of the
	// controller's --stdio-commands (never a program), extra arguments,
	// and variables as references.
	Command string                     `json:"command"`
	Args    []string                   `json:"args"`
	Env     map[string]json.RawMessage `json:"env"`
	// Auth is the backend's auth section as in the config file (JSON
	// names as the YAML's); only the one the file holds for the backend
	// is taken (config.Fleet.CheckBinding).
	Auth *credential.Auth `json:"auth"`
	// Tools, Prompts and Resources are the backend's naming rules
	// ({"include": [...], "exclude": [...], "rename": {...}}), as in the
	// config file; absent: none. Like every field, they replace the
	// backend's previous ones.
	Tools     naming.Rules `json:"tools"`
	Prompts   naming.Rules `json:"prompts"`
	Resources naming.Rules `json:"resources"`
}

func (c *Controller) putBackend(w http.ResponseWriter, r *http.Request) {
	group, name := r.PathValue("group"), r.PathValue("name")
	var body putBody
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxAdminBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("PUT backend %s/%s: body: %w", group, name, err))
		return
	}
	headers, err := config.ParseHeadersJSON(body.Headers)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("PUT backend %s/%s: %w", group, name, err))
		return
	}
	var env map[string]credential.Ref
	for k, raw := range body.Env {
		ref, err := credential.ParseRefJSON(raw)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("PUT backend %s/%s: env %q: %w", group, name, k, err))
			return
		}
		if env == nil {
			env = map[string]credential.Ref{}
		}
		env[k] = ref
	}
	b := config.Backend{Name: name, URL: body.URL, Transport: body.Transport, Headers: headers, AllowLinkLocal: body.AllowLinkLocal,
		Command: body.Command, Args: body.Args, Env: env, Auth: body.Auth,
		Tools: body.Tools, Prompts: body.Prompts, Resources: body.Resources}
	if err := checkStdioBackend(c.opts.Stdio, group, b); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("PUT backend %s/%s: %w", group, name, err))
		return
	}
	// A credential reference goes only where the config file sends it.
	if err := c.fileFleet().CheckBinding(group, b); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("PUT backend %s/%s: %w", group, name, err))
		return
	}
	err = c.submitAdmin(r.Context(), adminChange{ref: config.BackendRef{Group: group, Name: name}, what: "PUT " + group + "/" + name,
		apply: func(f *config.Fleet) error { return f.Put(group, b) }})
	if err != nil {
		writeError(w, statusOf(err), fmt.Errorf("PUT backend %s/%s: %w", group, name, err))
		return
	}
	want := c.Fleet()
	cfg, _ := want.Backend(group, name)
	spec := want.Naming(group)
	c.answerGeneration(w, r.Context(), func(s *events.State) bool {
		be := s.Backend(group, name)
		return be != nil && be.Config.Equal(backendConfig(cfg)) && s.Group(group).NamingSpec().Equal(spec)
	})
}

func (c *Controller) deleteBackend(w http.ResponseWriter, r *http.Request) {
	group, name := r.PathValue("group"), r.PathValue("name")
	err := c.submitAdmin(r.Context(), adminChange{ref: config.BackendRef{Group: group, Name: name}, what: "DELETE " + group + "/" + name,
		apply: func(f *config.Fleet) error { return f.Delete(group, name) }})
	if err != nil {
		writeError(w, statusOf(err), fmt.Errorf("DELETE backend %s/%s: %w", group, name, err))
		return
	}
	spec := c.Fleet().Naming(group)
	c.answerGeneration(w, r.Context(), func(s *events.State) bool {
		return s.Backend(group, name) == nil && s.Group(group).NamingSpec().Equal(spec)
	})
}

// refreshBackend has the leader probe and rediscover one backend now
// (202 when asked; 404 for a backend the fleet does not have).
func (c *Controller) refreshBackend(w http.ResponseWriter, r *http.Request) {
	key := BackendKey{Group: r.PathValue("group"), Name: r.PathValue("name")}
	n, err := c.Refresh(r.Context(), func(k BackendKey) bool { return k == key })
	switch {
	case err != nil:
		writeError(w, statusOf(err), fmt.Errorf("refresh backend %s: %w", key, err))
	case n == 0:
		writeError(w, http.StatusNotFound, fmt.Errorf("refresh backend %s: %w", key, config.ErrNotFound))
	default:
		writeJSON(w, http.StatusAccepted, map[string]int{"refreshed": n})
	}
}

// refreshAll has the leader probe and rediscover every backend now.
func (c *Controller) refreshAll(w http.ResponseWriter, r *http.Request) {
	n, err := c.Refresh(r.Context(), func(BackendKey) bool { return true })
	if err != nil {
		writeError(w, statusOf(err), fmt.Errorf("refresh: %w", err))
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]int{"refreshed": n})
}

// answerGeneration waits until the log reflects the change and answers
// with the generation; while the log is unreachable the change waits in
// the outbox and the answer is 202 with the last known generation.
func (c *Controller) answerGeneration(w http.ResponseWriter, ctx context.Context, done func(*events.State) bool) {
	changed, stop := c.reader.Watch()
	defer stop()
	timeout := time.After(5 * time.Second)
	for {
		s := c.reader.State()
		if done(s) {
			writeJSON(w, 200, map[string]uint64{"generation": s.Generation})
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		case <-timeout:
			writeJSON(w, http.StatusAccepted, map[string]any{"generation": s.Generation, "pending": true})
			return
		}
	}
}

func (c *Controller) getView(w http.ResponseWriter, r *http.Request) {
	group := r.PathValue("group")
	s := c.reader.State()
	if c.merged != nil {
		s = c.merged.State()
	}
	v, st := c.groupViews(s, group)
	out := ViewJSON{Generation: s.Generation, Regions: s.Regions, Digest: catalog.ViewDigest(v, st), Tools: make([]json.RawMessage, 0, len(v.Tools))}
	for _, t := range v.Tools {
		out.Tools = append(out.Tools, t.Def)
	}
	if out.Digest != v.Digest {
		out.Eras = &ViewErasJSON{Session: EraJSON{Digest: v.Digest}, Stateless: EraJSON{Digest: st.Digest, Tools: make([]json.RawMessage, 0, len(st.Tools))}}
		for _, t := range st.Tools {
			out.Eras.Stateless.Tools = append(out.Eras.Stateless.Tools, t.Def)
		}
	}
	writeJSON(w, 200, out)
}

// GroupView aggregates the group into the view a passthrough edge serves
// (fromstate.View): the advertisable backends with a catalog, named by the
// group's naming in the log (sep is the fallback separator of a log without
// one) over every backend with a known catalog.
func GroupView(g *events.Group, sep string, prev *catalog.View) *catalog.View {
	return fromstate.View(g, sep, prev)
}

func (c *Controller) getEvents(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, err := parseUint(q.Get("from"), 1)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("events: from: %w", err))
		return
	}
	limit, err := parseUint(q.Get("limit"), 100)
	if err != nil || limit == 0 || limit > 1000 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("events: limit must be 1..1000"))
		return
	}
	evs, err := c.opts.Log.Events(r.Context(), from, int(limit))
	if err != nil {
		status := http.StatusServiceUnavailable
		if errors.Is(err, events.ErrPurged) {
			status = http.StatusGone
		}
		writeError(w, status, err)
		return
	}
	writeJSON(w, 200, evs)
}

func parseUint(s string, def uint64) (uint64, error) {
	if s == "" {
		return def, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

func statusOf(err error) int {
	switch {
	case errors.Is(err, ErrNotLeader):
		return http.StatusServiceUnavailable
	case errors.Is(err, config.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, config.ErrInvalidConfig):
		return http.StatusBadRequest
	default:
		return http.StatusInternalServerError
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
