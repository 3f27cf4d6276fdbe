package signin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/tokenexchange"
)

// Tokens are the answer of a code or refresh grant.
type Tokens struct {
	Access tokenexchange.Token
	// Refresh is the refresh token; zero when the server issued none (a
	// refresh grant that issued none keeps the one it used).
	Refresh credential.Secret
}

// Client is what the edge's client registration is: its id and, for a
// confidential client, the reference of its secret.
type Client struct {
	ID     string
	Secret credential.Ref
}

// ParseTokens reads a token endpoint's answer to a code or refresh grant
// (tokenexchange.ParseResponse for the access token, plus the
// refresh_token: visible ASCII of at most tokenexchange.MaxToken bytes).
func ParseTokens(status int, body []byte) (Tokens, error) {
	at, err := tokenexchange.ParseResponse(status, body)
	if err != nil {
		return Tokens{}, err
	}
	var doc struct {
		Refresh *string `json:"refresh_token"`
	}
	_ = json.Unmarshal(bytes.TrimSpace(body), &doc) // parsed as an object above
	t := Tokens{Access: at}
	if doc.Refresh != nil && *doc.Refresh != "" {
		if len(*doc.Refresh) > tokenexchange.MaxToken || !visibleASCII(*doc.Refresh) {
			return Tokens{}, fmt.Errorf("%w: refresh_token is not a token", tokenexchange.ErrBadResponse)
		}
		t.Refresh = credential.NewSecret(*doc.Refresh)
	}
	return t, nil
}

// post sends form to a token endpoint as client c and parses the answer.
func post(ctx context.Context, hc *http.Client, timeout time.Duration, endpoint string, c Client, form url.Values) (Tokens, error) {
	if _, err := absURL(endpoint, "token_endpoint"); err != nil {
		return Tokens{}, err
	}
	var secret credential.Secret
	if c.Secret != (credential.Ref{}) {
		var err error
		if secret, err = credential.Resolve(c.Secret); err != nil {
			return Tokens{}, fmt.Errorf("client_secret: %w", err)
		}
	} else {
		form.Set("client_id", c.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return Tokens{}, fmt.Errorf("token request: %w", ErrBadMetadata)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if secret.Reveal() != "" {
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(secret.Reveal()))
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Tokens{}, fmt.Errorf("post %s: %w", origin(endpoint), scrub(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, tokenexchange.MaxResponse+1))
	if err != nil {
		return Tokens{}, fmt.Errorf("read %s: %w", origin(endpoint), scrub(err))
	}
	return ParseTokens(resp.StatusCode, body)
}

// exchangeCode redeems an authorization code (RFC 6749 4.1.3) with its
// PKCE verifier.
func exchangeCode(ctx context.Context, hc *http.Client, timeout time.Duration, p Pending, c Client, code, redirect string) (Tokens, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirect},
		"code_verifier": {p.Verifier}}
	if p.Resource != "" {
		form.Set("resource", p.Resource)
	}
	t, err := post(ctx, hc, timeout, p.TokenEndpoint, c, form)
	if err != nil {
		return Tokens{}, fmt.Errorf("authorization code grant: %w", err)
	}
	return t, nil
}

// refresh uses a refresh token (RFC 6749 section 6).
func refresh(ctx context.Context, hc *http.Client, timeout time.Duration, endpoint, resource string, c Client, rt credential.Secret) (Tokens, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt.Reveal()}}
	if resource != "" {
		form.Set("resource", resource)
	}
	t, err := post(ctx, hc, timeout, endpoint, c, form)
	if err != nil {
		return Tokens{}, fmt.Errorf("refresh grant: %w", err)
	}
	if t.Refresh.Reveal() == "" {
		t.Refresh = rt
	}
	return t, nil
}

// maxClientID bounds a registered client id.
const maxClientID = 256

// ParseRegistration reads a registration endpoint's answer (RFC 7591
// 3.2.1): a client_id of at most maxClientID visible ASCII bytes.
func ParseRegistration(status int, body []byte) (string, error) {
	if status != http.StatusCreated && status != http.StatusOK {
		return "", fmt.Errorf("%w: registration answered HTTP %d", ErrBadMetadata, status)
	}
	var doc struct {
		ClientID string `json:"client_id"`
	}
	if err := decodeObject(body, &doc); err != nil {
		return "", fmt.Errorf("registration: %w", err)
	}
	if doc.ClientID == "" || len(doc.ClientID) > maxClientID || !visibleASCII(doc.ClientID) {
		return "", fmt.Errorf("%w: registration answered no usable client_id", ErrBadMetadata)
	}
	return doc.ClientID, nil
}

// register registers the edge as a public client with redirect (RFC 7591).
func register(ctx context.Context, hc *http.Client, timeout time.Duration, endpoint, redirect string, scopes []string) (string, error) {
	if _, err := absURL(endpoint, "registration_endpoint"); err != nil {
		return "", err
	}
	body, _ := json.Marshal(map[string]any{"client_name": "fleetgate", "redirect_uris": []string{redirect},
		"grant_types": []string{"authorization_code", "refresh_token"}, "response_types": []string{"code"},
		"token_endpoint_auth_method": "none", "scope": strings.Join(scopes, " ")})
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("registration: %w", ErrBadMetadata)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("registration at %s: %w", origin(endpoint), scrub(err))
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxDocument+1))
	if err != nil {
		return "", fmt.Errorf("registration at %s: %w", origin(endpoint), scrub(err))
	}
	return ParseRegistration(resp.StatusCode, answer)
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
