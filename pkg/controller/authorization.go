package controller

import (
	"fmt"
	"io"
	"net/http"

	"github.com/fleetgate/fleetgate/pkg/config"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// AuthorizationJSON is GET /v1/authorization and the authorization field
// of GET /v1/state: the section in force (null for none: everything
// allowed), its digest, and the generation of the policy_changed event
// that set it (0: never set).
type AuthorizationJSON struct {
	Generation uint64          `json:"generation"`
	Digest     string          `json:"digest,omitempty"`
	Section    *policy.Section `json:"section"`
	// Error is set when the section in the log could not be read; the
	// edges then refuse every tool.
	Error string `json:"error,omitempty"`
}

func authorizationOf(s *events.State) AuthorizationJSON {
	a := s.Authorization
	if a == nil {
		return AuthorizationJSON{}
	}
	return AuthorizationJSON{Generation: a.Generation, Digest: a.Digest, Section: a.Section, Error: a.Error}
}

func authorizationDigest(s *events.State) string {
	if s.Authorization == nil {
		return ""
	}
	return s.Authorization.Digest
}

func (c *Controller) getAuthorization(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, authorizationOf(c.reader.State()))
}

// putAuthorization replaces the fleet's authorization section with the
// body (the section as JSON). A section that does not validate or compile
// is a 400 naming the rule; the answer is the generation of the
// policy_changed event (the current one when nothing changed). Like a
// backend PUT, the change survives a reload unless the reloaded file
// changed the authorization too, and lasts until the controller restarts.
func (c *Controller) putAuthorization(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, policy.MaxSectionBytes))
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("PUT authorization: body: %w", err))
		return
	}
	sec, err := policy.ParseJSON(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("PUT authorization: %w", err))
		return
	}
	c.setAuthorization(w, r, "PUT", sec)
}

// deleteAuthorization removes the section: everything is allowed again.
func (c *Controller) deleteAuthorization(w http.ResponseWriter, r *http.Request) {
	c.setAuthorization(w, r, "DELETE", nil)
}

func (c *Controller) setAuthorization(w http.ResponseWriter, r *http.Request, method string, sec *policy.Section) {
	err := c.submitAdmin(r.Context(), adminChange{what: method + " authorization",
		apply: func(f *config.Fleet) error { return f.SetAuthorization(sec) }})
	if err != nil {
		writeError(w, statusOf(err), fmt.Errorf("%s authorization: %w", method, err))
		return
	}
	want := sec.Digest()
	c.answerGeneration(w, r.Context(), func(s *events.State) bool { return authorizationDigest(s) == want })
}
