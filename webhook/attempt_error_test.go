package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// postErr makes one POST with client and returns its error.
func postErr(t *testing.T, client *http.Client, url string) error {
	t.Helper()
	res, err := client.Post(url, "application/json", strings.NewReader("{}"))
	if err == nil {
		res.Body.Close()
	}
	require.Error(t, err, url)
	return err
}

// wrapped wraps inner as net/http wraps a dial error: *url.Error around
// *net.OpError.
func wrapped(addr string, inner error) error {
	ap := net.TCPAddrFromAddrPort(netip.MustParseAddrPort(addr))
	return &url.Error{Op: "Post", URL: "https://hooks.example.com/x", Err: &net.OpError{Op: "dial", Net: "tcp", Addr: ap, Err: inner}}
}

// Real errors, from real connections, and the shapes the brief's examples
// take: each maps to its generic text, and none of the texts the tenant
// sees contains an address, a port or a resolver.
func TestPublicAttemptError(t *testing.T) {
	t.Parallel()
	open := NewHTTPClient(2*time.Second, true)
	guarded := NewHTTPClient(2*time.Second, false)

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closedURL := "http://" + closed.Addr().String() + "/"
	closed.Close()

	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(plain.Close)
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(tlsSrv.Close)
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); hang.Close() })
	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(hangup.Close)
	impatient := NewHTTPClient(50*time.Millisecond, true)

	for name, c := range map[string]struct {
		err  error
		want string
	}{
		"dial refused, real": {postErr(t, open, closedURL), "connection refused"},
		"dial refused, internal address": {
			wrapped("10.0.0.3:443", os.NewSyscallError("connect", syscall.ECONNREFUSED)), "connection refused",
		},
		"guard, real": {postErr(t, guarded, plain.URL), "destination address is not allowed"},
		"guard, wrapped": {
			wrapped("169.254.169.254:80", fmt.Errorf("%w: 169.254.169.254", ErrForbiddenAddress)), "destination address is not allowed",
		},
		"no such host, with resolver": {
			wrapped("0.0.0.0:443", &net.DNSError{Err: "no such host", Name: "x", Server: "127.0.0.53:53", IsNotFound: true}),
			"DNS resolution failed",
		},
		"DNS timeout": {
			wrapped("0.0.0.0:443", &net.DNSError{Err: "i/o timeout", Name: "x", Server: "10.0.0.2:53", IsTimeout: true}),
			"DNS resolution failed",
		},
		"client timeout, real":      {postErr(t, impatient, hang.URL), "timeout"},
		"deadline exceeded":         {fmt.Errorf("post: %w", context.DeadlineExceeded), "timeout"},
		"dial i/o timeout":          {wrapped("10.0.0.3:443", os.ErrDeadlineExceeded), "timeout"},
		"unknown authority, real":   {postErr(t, open, tlsSrv.URL), "TLS handshake failed"},
		"plain HTTP receiver, real": {postErr(t, open, strings.Replace(plain.URL, "http:", "https:", 1)), "TLS handshake failed"},
		"alert":                     {&url.Error{Op: "Post", URL: "https://h/", Err: tls.AlertError(40)}, "TLS handshake failed"},
		"hostname mismatch": {
			&url.Error{Op: "Post", URL: "https://h/", Err: &tls.CertificateVerificationError{Err: x509.HostnameError{Certificate: &x509.Certificate{}, Host: "10.0.0.3"}}},
			"TLS handshake failed",
		},
		"record header": {&url.Error{Op: "Post", URL: "https://h/", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}, "TLS handshake failed"},
		"tls: plain error": {
			&url.Error{Op: "Post", URL: "https://h/", Err: errors.New("tls: server selected unsupported protocol version 300")},
			"TLS handshake failed",
		},
		"reset": {
			wrapped("10.0.0.3:443", os.NewSyscallError("read", syscall.ECONNRESET)), "connection reset",
		},
		"closed without answer, real": {postErr(t, open, hangup.URL), "connection reset"},
		"host unreachable": {
			wrapped("10.0.0.3:443", os.NewSyscallError("connect", syscall.EHOSTUNREACH)), "request failed",
		},
		"canceled":     {fmt.Errorf("post: %w", context.Canceled), "request failed"},
		"encode event": {errors.New("encode event: json: unsupported value"), "request failed"},
		"tls: in the URL only": {
			&url.Error{Op: "Post", URL: "https://h/tls: x", Err: errors.New("unsupported protocol scheme")}, "request failed",
		},
	} {
		got := publicAttemptError(c.err)
		require.Equal(t, c.want, got, "%s: %v", name, c.err)
		require.NotRegexp(t, `[0-9]`, got, name)
	}
	require.Empty(t, publicAttemptError(nil))

	// The real errors did carry what the tenant must not see.
	require.Contains(t, postErr(t, guarded, plain.URL).Error(), "127.0.0.1")
	require.Contains(t, postErr(t, open, closedURL).Error(), "127.0.0.1")
}

// The server's log keeps a failed attempt's cause but not the secrets a
// receiver's URL carries: of the URL, only its scheme and host.
func TestLoggedAttemptErrorKeepsNoURLSecret(t *testing.T) {
	t.Parallel()
	cause := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	err := &url.Error{Op: "Post", URL: "https://user:pw@hooks.example.com/services/T0/B0/s3cr3t?token=t0k3n", Err: cause}
	got := loggedAttemptError(fmt.Errorf("deliver: %w", err))
	require.Equal(t, "Post https://hooks.example.com: "+cause.Error(), got)
	for _, secret := range []string{"pw", "s3cr3t", "t0k3n", "services"} {
		require.NotContains(t, got, secret)
	}
	require.Equal(t, "plain", loggedAttemptError(errors.New("plain")))
}
