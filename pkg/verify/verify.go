package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/convergence"
)

// Defaults of Options.
const (
	DefaultProtocolVersion = "2025-11-25"
	DefaultMaxPages        = 1000
	DefaultGroup           = "default"
)

// closeTimeout bounds the DELETE that ends the session.
const closeTimeout = 2 * time.Second

// Exit statuses of a Report (see Report.ExitCode) and of Main.
const (
	ExitConverged    = 0
	ExitStale        = 1
	ExitIncomplete   = 2
	ExitUnverifiable = 3
	// ExitError: bad flags, an unreachable endpoint or controller, a
	// failed initialize: no report was produced.
	ExitError = 4
)

// ErrUnsupportedProtocol is returned for a requested protocol version this
// client does not speak (the stateless 2026-07-28 generation).
var ErrUnsupportedProtocol = errors.New("unsupported protocol version")

// ErrOptions is wrapped by the errors Run returns for invalid Options.
var ErrOptions = errors.New("invalid options")

// Options configure Run. Only URL is required.
type Options struct {
	// URL is the MCP endpoint (streamable HTTP), e.g. http://127.0.0.1:8080/mcp.
	URL string
	// ExpectDigest is the catalog digest the endpoint must serve.
	ExpectDigest string
	// Controller is a controller admin base URL (http://127.0.0.1:8081);
	// the digest and generation of GET {Controller}/v1/groups/{Group}/view
	// are the expectation. Exclusive with ExpectDigest.
	Controller string
	// ControllerToken is the bearer token of the controller's admin API
	// (the content of its --admin-token-file); sent to Controller only.
	ControllerToken []byte
	// Group is the controller group; default DefaultGroup.
	Group string
	// ProtocolVersion requested in initialize; default
	// DefaultProtocolVersion. Session-based versions only (up to 2025-11-25).
	ProtocolVersion string
	// HTTPClient is used for every request; nil means a plain client.
	// Bound the run with the context, not Client.Timeout.
	HTTPClient *http.Client
	// MaxPages bounds the traversal; default DefaultMaxPages.
	MaxPages int
	// Header is added to every request to the endpoint (e.g. Authorization).
	Header http.Header
}

// Report is the result of a verification, printed as JSON by Main.
type Report struct {
	URL             string `json:"url"`
	ProtocolVersion string `json:"protocol_version"`
	Server          struct {
		Name    string `json:"name,omitempty"`
		Version string `json:"version,omitempty"`
	} `json:"server"`
	// ListChanged: the server advertised tools.listChanged.
	ListChanged bool `json:"list_changed"`
	// Pages is the number of tools/list pages fetched, Cursors the request
	// cursor of each ("" first), Complete whether the last page had no
	// nextCursor and NextCursor the one left outstanding otherwise.
	Pages      int      `json:"pages"`
	Cursors    []string `json:"cursors"`
	Complete   bool     `json:"complete"`
	NextCursor string   `json:"next_cursor,omitempty"`
	Tools      int      `json:"tools"`
	// Digest is catalog.Digest over the tools exactly as returned; set only
	// for a complete traversal.
	Digest   string              `json:"digest,omitempty"`
	Expected *Expectation        `json:"expected,omitempty"`
	Verdict  convergence.Status  `json:"verdict"`
	Reason   string              `json:"reason"`
	Error    string              `json:"error,omitempty"`
	Evidence *convergence.Record `json:"evidence"`
}

// Expectation is what the endpoint was compared against.
type Expectation struct {
	// Source is "expect-digest" or "controller".
	Source string `json:"source"`
	// Digest is what the traversal must yield: the view's digest, or
	// for a view served differently by era the session era's digest
	// (ViewDigest then being the view's, catalog.EraDigest of the eras').
	Digest     string `json:"digest"`
	ViewDigest string `json:"view_digest,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
	// Regions is, for a group spanning regions, the generation of each
	// region's log the controller's merged view reflects (Generation is
	// then their sum).
	Regions    map[string]uint64 `json:"regions,omitempty"`
	Controller string            `json:"controller,omitempty"`
	Group      string            `json:"group,omitempty"`
}

// ExitCode maps the verdict to an exit status: 0 only for converged.
func (r *Report) ExitCode() int {
	switch r.Verdict {
	case convergence.Converged:
		return ExitConverged
	case convergence.Stale:
		return ExitStale
	case convergence.Incomplete:
		return ExitIncomplete
	default:
		return ExitUnverifiable
	}
}

// Run verifies the endpoint o.URL: it fetches the expectation (if any),
// initializes a session, lists every page of tools and judges the traversal
// with convergence.Explain.
//
// Run returns an error, and no report, when the options are invalid, the
// controller view cannot be fetched, or the endpoint cannot be initialized.
// A traversal cut short afterwards (a failed page, a cursor loop, MaxPages)
// still yields a report: its Error says why and its verdict is not
// converged.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	rep := &Report{URL: o.URL, Cursors: []string{}}
	if o.ExpectDigest != "" {
		rep.Expected = &Expectation{Source: "expect-digest", Digest: o.ExpectDigest}
	}
	if o.Controller != "" {
		if rep.Expected, err = fetchView(ctx, o.HTTPClient, o.Controller, o.Group, o.ControllerToken); err != nil {
			return nil, fmt.Errorf("verify %s: %w", o.URL, err)
		}
	}

	c := &rpcClient{url: o.URL, http: o.HTTPClient, header: o.Header}
	if err := initialize(ctx, c, o.ProtocolVersion, rep); err != nil {
		return nil, fmt.Errorf("verify %s: %w", o.URL, err)
	}
	defer func() {
		// End the session even when ctx expired, but do not hang on it.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), closeTimeout)
		defer cancel()
		c.close(cctx)
	}()

	rec := &convergence.Record{ProtocolVersion: rep.ProtocolVersion, ServerListChanged: rep.ListChanged}
	if rep.Expected != nil {
		rec.SetCurrent(rep.Expected.Digest, rep.Expected.Generation)
		rec.CurrentRegions = rep.Expected.Regions
	}
	if err := traverse(ctx, c, o.MaxPages, rec, rep); err != nil {
		rep.Error = err.Error()
	}
	t := rec.Traversal
	rep.Pages, rep.Tools, rep.Digest = t.Pages, t.Tools, t.Digest
	rep.Complete, rep.NextCursor = t.Complete(), t.NextCursor
	rep.Verdict, rep.Reason = convergence.Explain(*rec)
	rep.Evidence = rec
	return rep, nil
}

func (o Options) withDefaults() (Options, error) {
	if o.URL == "" {
		return o, fmt.Errorf("verify: url: %w: required", ErrOptions)
	}
	if u, err := url.Parse(o.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return o, fmt.Errorf("verify: url %q: %w: want http(s)://host/path", o.URL, ErrOptions)
	}
	if o.ExpectDigest != "" && o.Controller != "" {
		return o, fmt.Errorf("verify: %w: expect-digest and controller are exclusive", ErrOptions)
	}
	if o.Group == "" {
		o.Group = DefaultGroup
	}
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = DefaultProtocolVersion
	}
	if o.ProtocolVersion >= "2026-07-28" {
		return o, fmt.Errorf("verify: protocol version %q: %w (session-based versions up to 2025-11-25 only)", o.ProtocolVersion, ErrUnsupportedProtocol)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.MaxPages <= 0 {
		o.MaxPages = DefaultMaxPages
	}
	return o, nil
}

// initialize runs initialize and notifications/initialized, filling the
// negotiation fields of rep.
func initialize(ctx context.Context, c *rpcClient, version string, rep *Report) error {
	raw, err := c.call(ctx, "initialize", map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "fleetgate-verify", "version": "1"},
	})
	if err != nil {
		return err
	}
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
		Capabilities    struct {
			Tools *struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"capabilities"`
		ServerInfo struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("initialize: decode result: %w", err)
	}
	if res.ProtocolVersion == "" {
		return fmt.Errorf("initialize: result has no protocolVersion")
	}
	c.protocol = res.ProtocolVersion
	rep.ProtocolVersion = res.ProtocolVersion
	rep.ListChanged = res.Capabilities.Tools != nil && res.Capabilities.Tools.ListChanged
	rep.Server.Name, rep.Server.Version = res.ServerInfo.Name, res.ServerInfo.Version
	return c.notify(ctx, "notifications/initialized")
}

// traverse lists every page of tools/list into rec, following nextCursor
// until a page has none, a cursor repeats or maxPages pages were fetched.
func traverse(ctx context.Context, c *rpcClient, maxPages int, rec *convergence.Record, rep *Report) error {
	cursor := ""
	followed := map[string]bool{}
	for page := 0; ; page++ {
		if page == maxPages {
			return fmt.Errorf("tools/list: stopped after %d pages (max pages) with nextCursor %q outstanding", maxPages, cursor)
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := c.call(ctx, "tools/list", params)
		if err != nil {
			return fmt.Errorf("page %d (cursor %q): %w", page+1, cursor, err)
		}
		var res struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &res); err != nil {
			return fmt.Errorf("tools/list page %d (cursor %q): decode result: %w", page+1, cursor, err)
		}
		followed[cursor] = true
		rep.Cursors = append(rep.Cursors, cursor)
		if err := rec.ListPage(time.Now(), cursor, res.Tools, res.NextCursor, catalog.Digest); err != nil {
			return fmt.Errorf("tools/list page %d (cursor %q): %w", page+1, cursor, err)
		}
		if res.NextCursor == "" {
			return nil
		}
		if followed[res.NextCursor] {
			return fmt.Errorf("tools/list page %d: cursor loop: nextCursor %q was already followed", page+1, res.NextCursor)
		}
		cursor = res.NextCursor
	}
}
