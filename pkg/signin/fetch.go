package signin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/backendnet"
)

// DefaultTimeout bounds one request of discovery or to a token endpoint.
const DefaultTimeout = 5 * time.Second

// maxRedirects bounds the same-origin redirects a fetch follows.
const maxRedirects = 3

// errOtherOrigin: a redirect to another origin (never followed).
var errOtherOrigin = errors.New("redirect to another origin refused")

// newHTTPClient is hc (nil: a client whose dials refuse link-local and
// metadata addresses) following only same-origin redirects, at most
// maxRedirects.
func newHTTPClient(hc *http.Client) http.Client {
	var c http.Client
	if hc != nil {
		c = *hc
	} else {
		c.Transport = backendnet.Transport(false)
	}
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return fmt.Errorf("over %d redirects", maxRedirects)
		}
		if o := via[0].URL; req.URL.Scheme != o.Scheme || req.URL.Host != o.Host {
			return errOtherOrigin
		}
		return nil
	}
	return c
}

// fetch GETs u's JSON document (at most MaxDocument bytes, within
// timeout). It returns the status, the WWW-Authenticate value and, when
// body, the body (not read otherwise: the backend's own URL may answer a
// stream). Errors name the operation and the URL's origin, never a query.
func fetch(ctx context.Context, hc *http.Client, timeout time.Duration, u string, body bool) (int, string, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "", nil, fmt.Errorf("get %s: %w", origin(u), ErrBadMetadata)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", nil, fmt.Errorf("get %s: %w", origin(u), scrub(err))
	}
	defer resp.Body.Close()
	if !body {
		return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), nil, nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocument+1))
	if err != nil {
		return 0, "", nil, fmt.Errorf("read %s: %w", origin(u), scrub(err))
	}
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), data, nil
}

// discover finds the authorization server of the backend at resource:
// the resource_metadata of its 401 challenge (to a plain GET), else its
// RFC 9728 well-known document; then the server's RFC 8414 metadata.
func discover(ctx context.Context, hc *http.Client, timeout time.Duration, resource string) (ResourceMetadata, ServerMetadata, error) {
	ru, err := absURL(resource, "backend url")
	if err != nil {
		return ResourceMetadata{}, ServerMetadata{}, err
	}
	var prmURL string
	if status, challenge, _, err := fetch(ctx, hc, timeout, resource, false); err == nil && status == http.StatusUnauthorized {
		if prmURL, err = ParseChallenge(challenge); err != nil {
			return ResourceMetadata{}, ServerMetadata{}, fmt.Errorf("backend challenge: %w", err)
		}
	}
	if prmURL == "" {
		prmURL = wellKnown(ru, "oauth-protected-resource")
	}
	status, _, body, err := fetch(ctx, hc, timeout, prmURL, true)
	if err != nil {
		return ResourceMetadata{}, ServerMetadata{}, fmt.Errorf("protected resource metadata: %w", err)
	}
	if status != http.StatusOK {
		return ResourceMetadata{}, ServerMetadata{}, fmt.Errorf("protected resource metadata: %w: HTTP %d", ErrBadMetadata, status)
	}
	prm, err := ParseResourceMetadata(body, resource)
	if err != nil {
		return ResourceMetadata{}, ServerMetadata{}, err
	}
	issuer := prm.AuthorizationServers[0]
	iu, _ := url.Parse(issuer) // checked by ParseResourceMetadata
	status, _, body, err = fetch(ctx, hc, timeout, wellKnown(iu, "oauth-authorization-server"), true)
	if err != nil {
		return ResourceMetadata{}, ServerMetadata{}, fmt.Errorf("authorization server metadata: %w", err)
	}
	if status != http.StatusOK {
		return ResourceMetadata{}, ServerMetadata{}, fmt.Errorf("authorization server metadata: %w: HTTP %d", ErrBadMetadata, status)
	}
	asm, err := ParseServerMetadata(body, issuer)
	if err != nil {
		return ResourceMetadata{}, ServerMetadata{}, err
	}
	return prm, asm, nil
}

// wellKnown is the well-known URL of name for u (RFC 8615, the path of u
// appended after it as RFC 8414 and RFC 9728 insert it).
func wellKnown(u *url.URL, name string) string {
	w := url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/.well-known/" + name + strings.TrimSuffix(u.EscapedPath(), "/")}
	return w.String()
}

// origin is u's scheme and host, for error texts.
func origin(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return "(malformed URL)"
	}
	return p.Scheme + "://" + p.Host
}

// scrub keeps the cause of a transport error and drops the request it
// names (a *url.Error quotes the URL with its query).
func scrub(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
