package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
)

// Texts a tenant sees for a failed attempt, in webhook_attempts.error and
// the delivery's last error.
const (
	attemptErrRefused   = "connection refused"
	attemptErrTimeout   = "timeout"
	attemptErrDNS       = "DNS resolution failed"
	attemptErrForbidden = "destination address is not allowed"
	attemptErrTLS       = "TLS handshake failed"
	attemptErrReset     = "connection reset"
	attemptErrHeaders   = "response headers too large"
	attemptErrOther     = "request failed"
)

// publicAttemptError maps a delivery error to a fixed, generic text safe to
// show the tenant. The raw error is not: "dial tcp 10.0.0.3:443: connect:
// connection refused" reveals what a tenant's host name resolves to inside
// our network, "lookup x on 127.0.0.53:53" our resolver, and the guard's
// error the very private address it refused, which turns the attempt log
// into a scanner of our network. The raw error is logged server-side
// instead. The checks go from the most specific cause to the least: a DNS
// timeout is reported as a DNS failure, a refused dial as a refusal.
func publicAttemptError(err error) string {
	if err == nil {
		return ""
	}
	var (
		dnsErr   *net.DNSError
		netErr   net.Error
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
		certErr  *tls.CertificateVerificationError
		echErr   *tls.ECHRejectionError
		authErr  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		invErr   x509.CertificateInvalidError
	)
	switch {
	case errors.Is(err, ErrForbiddenAddress):
		return attemptErrForbidden
	case errors.As(err, &dnsErr):
		return attemptErrDNS
	case errors.As(err, &recErr), errors.As(err, &alertErr), errors.As(err, &certErr), errors.As(err, &echErr),
		errors.As(err, &authErr), errors.As(err, &hostErr), errors.As(err, &invErr):
		return attemptErrTLS
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		// Includes the client's overall timeout and the transport's TLS
		// handshake timeout: the receiver was too slow, whatever the stage.
		return attemptErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return attemptErrRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		// EOF: the receiver closed the connection before answering.
		return attemptErrReset
	case isTLSMessage(err):
		return attemptErrTLS
	case headersTooLarge(err):
		return attemptErrHeaders
	}
	return attemptErrOther
}

// isTLSMessage catches handshake failures reported as plain errors: crypto/tls
// ("tls: server selected unsupported protocol version") and net/http, which
// replaces the tls.RecordHeaderError of a plain-HTTP receiver behind an
// https URL with its own text. It looks below the *url.Error, whose text
// includes the tenant's URL, so that a URL containing "tls: " is not
// mistaken for one.
func isTLSMessage(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "tls: ") || strings.Contains(msg, "server gave HTTP response to HTTPS client")
}

// headersTooLarge catches net/http's refusal of response headers over the
// client's bound (maxResponseHeaderBytes), which it reports only as text
// ("server response headers exceeded 65536 bytes; aborted"). Like
// isTLSMessage it looks below the *url.Error, whose text holds the URL.
func headersTooLarge(err error) bool {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err != nil && strings.Contains(err.Error(), "server response headers exceeded")
}

// loggedAttemptError is a failed attempt's error as the server logs it: the
// cause in full (the tenant sees only publicAttemptError), but of the
// tenant's URL only its scheme and host. A receiver's URL often carries the
// receiver's own secret, in its query (?token=…) or its path (chat
// services' incoming-webhook URLs), and the line names the endpoint, whose
// URL an operator can read where it is kept.
func loggedAttemptError(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err.Error()
	}
	where := "the endpoint's URL"
	if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
		where = u.Scheme + "://" + u.Host
	}
	return fmt.Sprintf("%s %s: %v", ue.Op, where, ue.Err)
}
