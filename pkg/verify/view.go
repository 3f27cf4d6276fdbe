package verify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
	"github.com/fleetgate/fleetgate/pkg/catalog"
)

// maxRegions bounds the generation vector a controller's view may name
// (region.MaxRegions and then some).
const maxRegions = 64

// ErrView is wrapped by the errors of fetching the controller's view.
var ErrView = errors.New("controller view")

// fetchView reads GET {controller}/v1/groups/{group}/view, with token as
// the bearer token of the admin API when it is not empty.
func fetchView(ctx context.Context, hc *http.Client, controller, group string, token []byte) (*Expectation, error) {
	u := strings.TrimRight(controller, "/") + "/v1/groups/" + url.PathEscape(group) + "/view"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%w of group %q: %w", ErrView, group, err)
	}
	adminauth.SetToken(req.Header, token)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w of group %q: %w", ErrView, group, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("%w of group %q: GET %s: HTTP %d: %s", ErrView, group, u, resp.StatusCode, strings.TrimSpace(string(snippet)))
	}
	exp, err := decodeView(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("%w of group %q: GET %s: %w", ErrView, group, u, err)
	}
	exp.Controller, exp.Group = controller, group
	return exp, nil
}

// decodeView reads a controller's view document (ViewJSON of package
// controller) into the expectation it sets: its generation, regions and
// digest, or, for a view served differently by era, the digest of the
// session era's list (this client speaks the session-based revisions),
// checked to make, with the stateless era's, the view's digest
// (catalog.EraDigest).
func decodeView(r io.Reader) (*Expectation, error) {
	var view struct {
		Generation uint64            `json:"generation"`
		Regions    map[string]uint64 `json:"regions"`
		Digest     string            `json:"digest"`
		Eras       *struct {
			Session struct {
				Digest string `json:"digest"`
			} `json:"session"`
			Stateless struct {
				Digest string `json:"digest"`
			} `json:"stateless"`
		} `json:"eras"`
	}
	if err := json.NewDecoder(r).Decode(&view); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if len(view.Regions) > maxRegions {
		return nil, fmt.Errorf("%d regions, at most %d", len(view.Regions), maxRegions)
	}
	if view.Digest == "" {
		return nil, errors.New("no digest in the view")
	}
	exp := &Expectation{Source: "controller", Digest: view.Digest, Generation: view.Generation, Regions: view.Regions}
	if e := view.Eras; e != nil {
		d, err := catalog.EraDigest(e.Session.Digest, e.Stateless.Digest)
		if err != nil || d != view.Digest {
			return nil, fmt.Errorf("%w: the eras' digests do not make the view's digest %.80q", ErrEras, view.Digest)
		}
		exp.ViewDigest, exp.Digest = view.Digest, e.Session.Digest
	}
	return exp, nil
}

// ErrEras: a view's era digests do not make its digest.
var ErrEras = errors.New("era digests")
