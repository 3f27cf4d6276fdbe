package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/fleetgate/fleetgate/pkg/adminauth"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/edge"
	"github.com/fleetgate/fleetgate/pkg/edge/clientaddr"
)

// accessConfig holds the flags of who may use the edge: bearer tokens on
// /mcp (--auth-*, --resource-url) and the admin API's token and Host
// allowlist.
type accessConfig struct {
	issuer, jwksURL, audience, scopes, resourceURL string
	adminTokenFile, adminHosts                     string
	trustedProxies, proxyHeader                    string

	clients *clientaddr.Resolver

	adminToken   []byte
	allowedHosts []string
	// credLimits are -credential-dir and -credential-env-prefix, as the
	// controller's.
	credLimits credential.Limits
}

func (c *accessConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.issuer, "auth-issuer", "", "OAuth 2.1 authorization server whose JWT access tokens the edge accepts; empty: no bearer auth")
	fs.StringVar(&c.jwksURL, "auth-jwks-url", "", "JWKS that verifies token signatures (default: from the issuer's metadata)")
	fs.StringVar(&c.audience, "auth-audience", "", "the aud every token must carry (default: -resource-url)")
	fs.StringVar(&c.scopes, "auth-scopes", "", "comma-separated scopes every token must carry")
	fs.StringVar(&c.resourceURL, "resource-url", "", "this endpoint's public URL, as clients reach it (default http://<listen>/mcp)")
	fs.StringVar(&c.adminTokenFile, "admin-token-file", "", "when set, every admin request but /healthz and /readyz needs Authorization: Bearer <the file's content>")
	fs.StringVar(&c.credLimits.Dir, "credential-dir", credential.DefaultDir,
		"directory every {file: PATH} header reference of a backend must lie under (\"/\": anywhere); a backend whose reference lies outside gets no call")
	fs.StringVar(&c.credLimits.EnvPrefix, "credential-env-prefix", "",
		"prefix every {env: NAME} header reference of a backend must begin with (empty: any but FLEETGATE_*); a backend whose reference does not gets no call")
	fs.StringVar(&c.trustedProxies, "trusted-proxies", "",
		"comma-separated CIDR prefixes or addresses of the proxies in front of the edge whose forwarding header (-trusted-proxy-header) names the client's address, which failed authentications are charged to; empty: every request is its connection's peer's (extension)")
	fs.StringVar(&c.proxyHeader, "trusted-proxy-header", clientaddr.HeaderXForwardedFor,
		"the header the trusted proxies append the client's address to: X-Forwarded-For or Forwarded (RFC 7239); only that one is read (extension)")
	fs.StringVar(&c.adminHosts, "admin-allowed-hosts", "", "more Host values the admin API answers (name or name:port, comma-separated); loopback names with the listen port always pass")
}

// check validates the flags and reads the admin token file; identityHeader
// is -identity-header's value (the two identity sources exclude each other).
func (c *accessConfig) check(identityHeader string) error {
	if c.issuer == "" {
		for name, v := range map[string]string{"auth-jwks-url": c.jwksURL, "auth-audience": c.audience, "auth-scopes": c.scopes} {
			if v != "" {
				return fmt.Errorf("invalid value %q for flag -%s: needs -auth-issuer", v, name)
			}
		}
	} else {
		if identityHeader != "" {
			return fmt.Errorf("invalid value %q for flag -identity-header: -identity-header and -auth-issuer exclude each other", identityHeader)
		}
		for name, v := range map[string]string{"auth-issuer": c.issuer, "auth-jwks-url": c.jwksURL, "resource-url": c.resourceURL} {
			if v == "" {
				continue
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
				return fmt.Errorf("invalid value %q for flag -%s: want an http(s) URL without user info", v, name)
			}
			// The issuer's metadata and keys decide which tokens are
			// good: never fetched in the clear, but from this machine.
			if name != "resource-url" && u.Scheme == "http" && !loopbackHost(u.Hostname()) {
				return fmt.Errorf("invalid value %q for flag -%s: want https (http only for a loopback host)", v, name)
			}
		}
	}
	var err error
	if c.adminTokenFile != "" {
		if c.adminToken, err = adminauth.ReadTokenFile(c.adminTokenFile); err != nil {
			return fmt.Errorf("flag -admin-token-file: %w", err)
		}
	}
	if c.allowedHosts, err = adminauth.ParseAllowedHosts(c.adminHosts); err != nil {
		return fmt.Errorf("flag -admin-allowed-hosts: %w", err)
	}
	if err := c.credLimits.Validate(); err != nil {
		return fmt.Errorf("flag -credential-dir or -credential-env-prefix: %w", err)
	}
	if c.clients, err = clientaddr.New(&clientaddr.Options{Trusted: c.trustedProxies, Header: c.proxyHeader}); err != nil {
		return fmt.Errorf("flag -trusted-proxies or -trusted-proxy-header: %w", err)
	}
	return nil
}

// apply sets the access options in o.
func (c *accessConfig) apply(o *edge.Options) {
	o.AdminToken, o.AdminAllowedHosts = c.adminToken, c.allowedHosts
	limits := c.credLimits
	o.CredentialLimits = &limits
	o.TrustedProxies = c.clients
	if c.issuer == "" {
		return
	}
	a := &edge.AuthOptions{Issuer: c.issuer, JWKSURL: c.jwksURL, Audience: c.audience, ResourceURL: c.resourceURL}
	for s := range strings.SplitSeq(c.scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			a.Scopes = append(a.Scopes, s)
		}
	}
	o.Auth = a
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
