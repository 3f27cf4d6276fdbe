package events

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/fleetgate/fleetgate/pkg/naming"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// EventJSON is the JSON form of an event for admin APIs and audit exports.
// A catalog event carries its tool names, digest and invalid tools; the
// full definitions stay in the log.
type EventJSON struct {
	Generation    uint64            `json:"generation"`
	Time          time.Time         `json:"time"`
	ControllerID  string            `json:"controller_id"`
	SchemaVersion uint32            `json:"schema_version"`
	Group         string            `json:"group"`
	Backend       string            `json:"backend"`
	Kind          string            `json:"kind"`
	Config        *BackendConfig    `json:"config,omitempty"`
	Health        *HealthChangeJSON `json:"health,omitempty"`
	Catalog       *CatalogJSON      `json:"catalog,omitempty"`
	// Authorization is the payload of a policy_changed event.
	Authorization *AuthorizationJSON `json:"authorization,omitempty"`
	// Naming is the payload of a naming_changed event: the group's spec
	// (null when the group left the config).
	Naming *NamingJSON `json:"naming,omitempty"`
	// Error is set for an event that could not be decoded, or whose time
	// is outside the years JSON writes (0-9999; Time is then zero).
	Error string `json:"error,omitempty"`
}

// NamingJSON is the payload of a naming_changed event.
type NamingJSON struct {
	Spec *naming.Spec `json:"spec"`
}

// HealthChangeJSON is the payload of a health_changed event.
type HealthChangeJSON struct {
	From         string `json:"from"`
	To           string `json:"to"`
	Advertisable bool   `json:"advertisable"`
	Reason       string `json:"reason,omitempty"`
}

// CatalogJSON summarises a catalog_changed event.
type CatalogJSON struct {
	Digest       string        `json:"digest"`
	Tools        []string      `json:"tools"`
	Resources    int           `json:"resources"`
	Prompts      int           `json:"prompts"`
	InvalidTools []InvalidTool `json:"invalid_tools,omitempty"`
	// ProtocolVersion, StatelessOnly: the catalog's (Catalog).
	ProtocolVersion string `json:"protocol_version,omitempty"`
	StatelessOnly   bool   `json:"stateless_only,omitempty"`
	// Stateless summarises the lists of the stateless generation, set
	// when they differ (Catalog.Stateless).
	Stateless *EraListsJSON `json:"stateless_lists,omitempty"`
}

// EraListsJSON summarises a catalog's lists of one era.
type EraListsJSON struct {
	Digest    string   `json:"digest"`
	Tools     []string `json:"tools"`
	Resources int      `json:"resources"`
	Prompts   int      `json:"prompts"`
}

// ToJSON converts a decoded event.
func ToJSON(ev *eventspb.Event) EventJSON {
	out := EventJSON{
		Generation: ev.GetGeneration(), Time: ev.GetTime().AsTime().UTC(), ControllerID: ev.GetControllerId(),
		SchemaVersion: ev.GetSchemaVersion(), Group: ev.GetGroup(), Backend: ev.GetBackend(), Kind: Kind(ev),
	}
	if y := out.Time.Year(); y < 0 || y > 9999 { // not writable as JSON: the whole page would fail
		out.Time, out.Error = time.Time{}, fmt.Sprintf("time: %d seconds is out of range", ev.GetTime().GetSeconds())
	}
	switch k := ev.Kind.(type) {
	case *eventspb.Event_BackendAdded:
		c := configFromProto(k.BackendAdded.GetConfig())
		out.Config = &c
	case *eventspb.Event_BackendRemoved:
		c := configFromProto(k.BackendRemoved.GetConfig())
		out.Config = &c
	case *eventspb.Event_HealthChanged:
		h := k.HealthChanged
		out.Health = &HealthChangeJSON{From: h.GetFrom(), To: h.GetTo(), Advertisable: h.GetAdvertisable(), Reason: h.GetReason()}
	case *eventspb.Event_CatalogChanged:
		c, err := catalogFromEvent(ev.GetGeneration(), k.CatalogChanged)
		if err != nil {
			out.Error = err.Error()
			break
		}
		out.Catalog = &CatalogJSON{Digest: c.Digest, Tools: c.ToolNames(), Resources: len(c.Resources),
			Prompts: len(c.Prompts), InvalidTools: c.InvalidTools, ProtocolVersion: c.ProtocolVersion, StatelessOnly: c.StatelessOnly}
		if e := c.Stateless; e != nil {
			out.Catalog.Stateless = &EraListsJSON{Digest: e.Digest, Tools: (&Catalog{Tools: e.Tools}).ToolNames(),
				Resources: len(e.Resources), Prompts: len(e.Prompts)}
		}
	case *eventspb.Event_NamingChanged:
		out.Naming = &NamingJSON{}
		if p := k.NamingChanged.GetSpec(); p != nil {
			spec, err := specFromProto(p)
			if err != nil {
				out.Error = err.Error()
				break
			}
			out.Naming.Spec = spec
		}
	case *eventspb.Event_PolicyChanged:
		a, err := authorizationJSON(k.PolicyChanged)
		if err != nil {
			out.Error = err.Error()
		}
		out.Authorization = a
	}
	return out
}

// MarshalEvent writes an event in its JSON form.
func MarshalEvent(ev *eventspb.Event) ([]byte, error) { return json.Marshal(ToJSON(ev)) }
