package webhook_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/webhook"
)

func TestIsPublicAddr(t *testing.T) {
	t.Parallel()
	for addr, public := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700:4700::1111": true,
		"127.0.0.1": false, "127.8.9.10": false, "::1": false,
		"10.1.2.3": false, "172.16.0.1": false, "172.31.255.255": false, "192.168.1.1": false,
		"100.64.0.1": false, "100.127.255.254": false,
		"169.254.169.254": false, "fe80::1": false, "fd00:ec2::254": false, "fc00::1": false,
		"0.0.0.0": false, "::": false, "224.0.0.1": false, "ff02::1": false, "255.255.255.255": false,
		"::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "64:ff9b::a00:1": false,
		"172.32.0.1": true, "100.128.0.1": true,
	} {
		require.Equal(t, public, webhook.IsPublicAddr(netip.MustParseAddr(addr)), addr)
	}
}

// The guard runs on the resolved address at connect time: a literal
// private address, a loopback server and a host name that resolves to
// loopback are all refused before any byte is sent.
func TestSSRFGuardRefusesAtDialTime(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	guarded := webhook.NewHTTPClient(2*time.Second, false)
	for _, url := range []string{
		srv.URL,                          // 127.0.0.1
		"http://localhost:" + port,       // a name that resolves to loopback
		"http://[::1]:" + port,           // IPv6 loopback
		"http://10.0.0.1:80/",            // RFC 1918
		"http://169.254.169.254/latest/", // cloud metadata
		"http://100.64.0.1/",             // CGNAT
	} {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader("{}"))
		require.NoError(t, err)
		_, err = guarded.Do(req)
		require.ErrorIs(t, err, webhook.ErrForbiddenAddress, url)
	}
	require.Zero(t, hits.Load())

	// AllowPrivate lifts the guard: the same loopback server is reached.
	open := webhook.NewHTTPClient(2*time.Second, true)
	res, err := open.Post(srv.URL, "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	res.Body.Close()
	require.EqualValues(t, 1, hits.Load())
}

func TestDeliveryClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var followed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Store(true)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)
	res, err := webhook.NewHTTPClient(2*time.Second, true).Post(srv.URL, "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusTemporaryRedirect, res.StatusCode)
	require.False(t, followed.Load())
}

func TestValidateURL(t *testing.T) {
	t.Parallel()
	for url, ok := range map[string]bool{
		"https://hooks.example.com/x":       true,
		"http://hooks.example.com:8080/x?a": true,
		"ftp://hooks.example.com/":          false,
		"https://user:pw@hooks.example.com": false,
		"https:///nohost":                   false,
		"https://example.com/#frag":         false,
		"not a url":                         false,
		"http://127.0.0.1/":                 false,
		"http://[::1]/":                     false,
		"http://169.254.169.254/":           false,
		"http://8.8.8.8/":                   true,
	} {
		err := webhook.ValidateURL(url, false)
		require.Equal(t, ok, err == nil, "%s: %v", url, err)
	}
	require.NoError(t, webhook.ValidateURL("http://127.0.0.1:9000/", true), "allowed for local development")
}
