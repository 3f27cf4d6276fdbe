package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/proto/eventspb"
)

// SchemaVersion is the envelope version this package writes and reads.
const SchemaVersion = 1

// compressAbove is the payload size from which catalog JSON is compressed.
const compressAbove = 1 << 10

// Kind names an event kind (used in metrics and logs).
func Kind(ev *eventspb.Event) string {
	switch ev.GetKind().(type) {
	case *eventspb.Event_BackendAdded:
		return "backend_added"
	case *eventspb.Event_BackendRemoved:
		return "backend_removed"
	case *eventspb.Event_HealthChanged:
		return "health_changed"
	case *eventspb.Event_CatalogChanged:
		return "catalog_changed"
	case *eventspb.Event_PolicyChanged:
		return "policy_changed"
	case *eventspb.Event_NamingChanged:
		return "naming_changed"
	default:
		return "unknown"
	}
}

func envelope(at time.Time, group, backend string) *eventspb.Event {
	return &eventspb.Event{
		Time:          timestamppb.New(at),
		SchemaVersion: SchemaVersion,
		Group:         group,
		Backend:       backend,
	}
}

// NewBackendAdded builds a backend-added event (generation is set by the writer).
func NewBackendAdded(at time.Time, group, backend string, cfg BackendConfig) *eventspb.Event {
	ev := envelope(at, group, backend)
	ev.Kind = &eventspb.Event_BackendAdded{BackendAdded: &eventspb.BackendAdded{Config: cfg.proto()}}
	return ev
}

// NewBackendRemoved builds a backend-removed event.
func NewBackendRemoved(at time.Time, group, backend string, cfg BackendConfig) *eventspb.Event {
	ev := envelope(at, group, backend)
	ev.Kind = &eventspb.Event_BackendRemoved{BackendRemoved: &eventspb.BackendRemoved{Config: cfg.proto()}}
	return ev
}

// NewHealthChanged builds a health-changed event.
func NewHealthChanged(at time.Time, group, backend, from, to string, advertisable bool, reason string) *eventspb.Event {
	ev := envelope(at, group, backend)
	ev.Kind = &eventspb.Event_HealthChanged{HealthChanged: &eventspb.HealthChanged{
		From: from, To: to, Advertisable: advertisable, Reason: reason,
	}}
	return ev
}

// NewCatalogChanged builds a catalog-changed event carrying the backend's
// full catalog. Definitions should already be canonical JSON.
func NewCatalogChanged(at time.Time, group, backend string, c *Catalog) (*eventspb.Event, error) {
	tools, err := marshalDefs(c.Tools)
	if err != nil {
		return nil, fmt.Errorf("catalog event %s/%s: tools: %w", group, backend, err)
	}
	resources, err := marshalDefs(c.Resources)
	if err != nil {
		return nil, fmt.Errorf("catalog event %s/%s: resources: %w", group, backend, err)
	}
	prompts, err := marshalDefs(c.Prompts)
	if err != nil {
		return nil, fmt.Errorf("catalog event %s/%s: prompts: %w", group, backend, err)
	}
	templates, err := marshalDefs(c.ResourceTemplates)
	if err != nil {
		return nil, fmt.Errorf("catalog event %s/%s: resource templates: %w", group, backend, err)
	}
	cc := &eventspb.CatalogChanged{Digest: c.Digest, ProtocolVersion: c.ProtocolVersion, StatelessOnly: c.StatelessOnly}
	if c.Stateless != nil {
		if cc.StatelessLists, err = eraListsOf(c.Stateless); err != nil { // era.go
			return nil, fmt.Errorf("catalog event %s/%s: stateless lists: %w", group, backend, err)
		}
	}
	if len(tools)+len(resources)+len(prompts)+len(templates)+eraSize(cc.StatelessLists) > compressAbove {
		cc.Compression = eventspb.Compression_COMPRESSION_ZSTD
		tools, resources, prompts, templates = compress(tools), compress(resources), compress(prompts), compress(templates)
		compressEra(cc.StatelessLists)
	}
	cc.Tools, cc.Resources, cc.Prompts, cc.ResourceTemplates = tools, resources, prompts, templates
	for _, it := range c.InvalidTools {
		cc.InvalidTools = append(cc.InvalidTools, &eventspb.InvalidTool{Name: it.Name, Reason: it.Reason})
	}
	ev := envelope(at, group, backend)
	ev.Kind = &eventspb.Event_CatalogChanged{CatalogChanged: cc}
	return ev, nil
}

func marshalDefs(defs []json.RawMessage) ([]byte, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, d := range defs {
		if !json.Valid(d) {
			return nil, fmt.Errorf("definition %d is not valid JSON", i)
		}
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(d)
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// Encode marshals an event for the log.
func Encode(ev *eventspb.Event) ([]byte, error) {
	b, err := proto.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event %s/%s: %w", ev.GetGroup(), ev.GetBackend(), err)
	}
	return b, nil
}

// Decode unmarshals and checks an event read from the log at generation gen.
// Errors match ErrDecode.
func Decode(gen uint64, data []byte) (*eventspb.Event, error) {
	ev := &eventspb.Event{}
	if err := proto.Unmarshal(data, ev); err != nil {
		return nil, errorf(CodeDecode, gen, err, "decode event")
	}
	switch {
	case ev.SchemaVersion != SchemaVersion:
		return nil, errorf(CodeDecode, gen, nil, "decode event: schema version %d, want %d", ev.SchemaVersion, SchemaVersion)
	case ev.Generation != gen:
		return nil, errorf(CodeDecode, gen, nil, "decode event: body generation %d differs from stream sequence", ev.Generation)
	case ev.Kind == nil:
		return nil, errorf(CodeDecode, gen, nil, "decode event: no kind")
	}
	return ev, nil
}

// catalogFromEvent decodes the definitions of a catalog-changed payload.
func catalogFromEvent(gen uint64, cc *eventspb.CatalogChanged) (*Catalog, error) {
	c := &Catalog{Digest: cc.Digest, Generation: gen, ProtocolVersion: cc.ProtocolVersion, StatelessOnly: cc.StatelessOnly}
	var err error
	if c.Tools, err = unmarshalDefs(cc.Tools, cc.Compression); err != nil {
		return nil, fmt.Errorf("tools: %w", err)
	}
	if c.Resources, err = unmarshalDefs(cc.Resources, cc.Compression); err != nil {
		return nil, fmt.Errorf("resources: %w", err)
	}
	if c.Prompts, err = unmarshalDefs(cc.Prompts, cc.Compression); err != nil {
		return nil, fmt.Errorf("prompts: %w", err)
	}
	if c.ResourceTemplates, err = unmarshalDefs(cc.ResourceTemplates, cc.Compression); err != nil {
		return nil, fmt.Errorf("resource templates: %w", err)
	}
	for _, it := range cc.InvalidTools {
		c.InvalidTools = append(c.InvalidTools, InvalidTool{Name: it.Name, Reason: it.Reason})
	}
	if el := cc.StatelessLists; el != nil {
		if c.Stateless, err = eraListsFrom(el, cc.Compression); err != nil {
			return nil, fmt.Errorf("stateless lists: %w", err)
		}
	}
	return c, nil
}

func unmarshalDefs(b []byte, comp eventspb.Compression) ([]json.RawMessage, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if comp == eventspb.Compression_COMPRESSION_ZSTD {
		var err error
		if b, err = decompress(b); err != nil {
			return nil, err
		}
	}
	var defs []json.RawMessage
	if err := json.Unmarshal(b, &defs); err != nil {
		return nil, err
	}
	return defs, nil
}

var (
	zenc = sync.OnceValue(func() *zstd.Encoder {
		e, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		return e
	})
	zdec = sync.OnceValue(func() *zstd.Decoder {
		d, _ := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(256<<20))
		return d
	})
)

func compress(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return zenc().EncodeAll(b, nil)
}

func decompress(b []byte) ([]byte, error) {
	out, err := zdec().DecodeAll(b, nil)
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return out, nil
}

func (c BackendConfig) proto() *eventspb.BackendConfig {
	p := &eventspb.BackendConfig{Url: c.URL, Transport: c.Transport, AllowLinkLocal: c.AllowLinkLocal}
	for _, name := range c.Headers.Names() { // sorted: the same config encodes the same
		r := c.Headers[name]
		p.Headers = append(p.Headers, &eventspb.HeaderRef{Name: name, Env: r.Env, File: r.File})
	}
	p.Command, p.Args = c.Command, c.Args
	for _, name := range slices.Sorted(maps.Keys(c.Env)) {
		r := c.Env[name]
		p.Env = append(p.Env, &eventspb.HeaderRef{Name: name, Env: r.Env, File: r.File})
	}
	if a := c.Auth; a != nil {
		p.Auth = &eventspb.BackendAuth{Type: a.Type, TokenUrl: a.TokenURL, Audience: a.Audience, Scopes: a.Scopes, ClientId: a.ClientID,
			BeforeSignIn: a.BeforeSignIn}
		if a.ClientSecret != (credential.Ref{}) {
			p.Auth.ClientSecret = &eventspb.HeaderRef{Env: a.ClientSecret.Env, File: a.ClientSecret.File}
		}
	}
	return p
}

// configFromProto reads a backend config. Its headers are taken as they
// are (the last of a repeated name wins): whoever resolves them validates
// them first (credential.NewTransport).
func configFromProto(p *eventspb.BackendConfig) BackendConfig {
	c := BackendConfig{URL: p.GetUrl(), Transport: p.GetTransport(), AllowLinkLocal: p.GetAllowLinkLocal()}
	for _, h := range p.GetHeaders() {
		if c.Headers == nil {
			c.Headers = credential.Headers{}
		}
		c.Headers[h.GetName()] = credential.Ref{Env: h.GetEnv(), File: h.GetFile()}
	}
	c.Command, c.Args = p.GetCommand(), p.GetArgs()
	for _, v := range p.GetEnv() {
		if c.Env == nil {
			c.Env = map[string]credential.Ref{}
		}
		c.Env[v.GetName()] = credential.Ref{Env: v.GetEnv(), File: v.GetFile()}
	}
	// Taken as it is, as the headers: the edge validates it before use.
	if a := p.GetAuth(); a != nil {
		c.Auth = &credential.Auth{Type: a.GetType(), TokenURL: a.GetTokenUrl(), Audience: a.GetAudience(), Scopes: a.GetScopes(),
			ClientID: a.GetClientId(), BeforeSignIn: a.GetBeforeSignIn()}
		if s := a.GetClientSecret(); s != nil {
			c.Auth.ClientSecret = credential.Ref{Env: s.GetEnv(), File: s.GetFile()}
		}
	}
	return c
}
