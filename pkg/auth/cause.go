package auth

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
)

// Causes of ErrKeysUnavailable: why the issuer's metadata or JWKS could
// not be fetched, a fixed set fit for a metric label (KeysCause).
const (
	CauseTimeout    = "timeout"     // the fetch (or the wait for it) ran out of time
	CauseHTTPStatus = "http_status" // an answer other than 200 (a redirect included: none is followed)
	CauseDecode     = "decode"      // fetched, but unusable: not JSON, too large, no usable key, metadata of another issuer
	CauseTLS        = "tls"         // the TLS handshake or the server's certificate failed
	CauseNetwork    = "network"     // DNS, refused or reset connections, a body cut short
	CauseOther      = "other"
)

// KeysCauses are every value KeysCause returns but "".
var KeysCauses = []string{CauseTimeout, CauseHTTPStatus, CauseDecode, CauseTLS, CauseNetwork, CauseOther}

// KeysCause classifies why err, an ErrKeysUnavailable of Verify, came
// about: one of KeysCauses; "" for an error that is not
// ErrKeysUnavailable. When discovery tried several documents, the first
// cause in the order of KeysCauses that any of them had wins.
func KeysCause(err error) string {
	if !errors.Is(err, ErrKeysUnavailable) {
		return ""
	}
	var (
		ne      net.Error
		status  *statusError
		dec     *decodeError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
		verify  *tls.CertificateVerificationError
		record  tls.RecordHeaderError
		alert   tls.AlertError
		op      *net.OpError
		dns     *net.DNSError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return CauseTimeout
	case errors.As(err, &status) || errors.Is(err, errRedirect):
		return CauseHTTPStatus
	case errors.As(err, &dec):
		return CauseDecode
	case errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) ||
		errors.As(err, &verify) || errors.As(err, &record) || errors.As(err, &alert):
		return CauseTLS
	case errors.As(err, &op) || errors.As(err, &dns) || errors.Is(err, errCutShort):
		return CauseNetwork
	}
	return CauseOther
}

// statusError is an answer of the issuer other than 200.
type statusError struct {
	url  string
	code int
}

func (e *statusError) Error() string { return fmt.Sprintf("GET %s: HTTP %d", e.url, e.code) }

// decodeError is a document that was fetched but cannot be used.
type decodeError struct{ err error }

func (e *decodeError) Error() string { return e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }

// undecodable marks err as a decodeError.
func undecodable(err error) error { return &decodeError{err: err} }

// errCutShort: the connection ended before the body did.
var errCutShort = errors.New("body cut short")
