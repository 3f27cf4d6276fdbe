package backendnet

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// ErrLinkLocal is matched by every refusal of a link-local or cloud
// metadata address or name.
var ErrLinkLocal = errors.New("link-local or cloud metadata address refused (allow_link_local: true allows it)")

// ErrUserInfo refuses a URL that carries user info.
var ErrUserInfo = errors.New("URL must not carry user info (credentials); use headers with {env: ...} or {file: ...}")

// metadataAddrs are cloud metadata services outside the link-local ranges.
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),   // AWS IMDS over IPv6
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud (legacy)
}

// metadataNames are host names of cloud metadata services.
var metadataNames = map[string]bool{
	"metadata":                     true, // GCP's short name
	"metadata.google.internal":     true,
	"metadata.goog":                true,
	"metadata.azure.internal":      true,
	"instance-data":                true, // AWS
	"instance-data.ec2.internal":   true,
	"metadata.tencentyun.com":      true,
	"metadata.platformequinix.com": true,
}

var (
	linkLocal4 = netip.MustParsePrefix("169.254.0.0/16")
	linkLocal6 = netip.MustParsePrefix("fe80::/10")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
)

// Refused reports whether a is link-local (169.254.0.0/16, fe80::/10) or
// a cloud metadata address, also in IPv4-mapped or NAT64 (64:ff9b::/96)
// form.
func Refused(a netip.Addr) bool {
	a = a.Unmap().WithZone("")
	if a.Is6() && nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	}
	if linkLocal4.Contains(a) || linkLocal6.Contains(a) || a.IsLinkLocalMulticast() {
		return true
	}
	for _, m := range metadataAddrs {
		if a == m {
			return true
		}
	}
	return false
}

// CheckHost refuses a URL host (without port) that is a link-local or
// metadata address or a metadata service's name. Names are otherwise not
// resolved here: the dialer refuses what they resolve to.
func CheckHost(host string) error {
	h := strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		if Refused(a) {
			return fmt.Errorf("host %s: %w", host, ErrLinkLocal)
		}
		return nil
	}
	if metadataNames[h] {
		return fmt.Errorf("host %s: %w", host, ErrLinkLocal)
	}
	return nil
}

// CheckURL checks a backend URL's destination: no user info, and (unless
// allowLinkLocal) a host that CheckHost accepts. Its messages never quote
// the URL: only the host, which is not a secret.
func CheckURL(u *url.URL, allowLinkLocal bool) error {
	if u.User != nil {
		return ErrUserInfo
	}
	if allowLinkLocal {
		return nil
	}
	return CheckHost(u.Hostname())
}
