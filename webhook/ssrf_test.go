package webhook_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
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

		// Zoned: netip.Prefix.Contains is false for any zoned address, so
		// these passed every prefix check. The zone is dropped first.
		"::1%lo": false, "fe80::1%eth0": false, "fe80::1%1": false, "fd00::1%eth0": false, "fc00::1%lo": false,
		"::ffff:127.0.0.1%lo": false, "ff02::1%eth0": false,
		"2606:4700:4700::1111%eth0": true, // a zone does not make a public address private

		// IPv6 forms that embed or reach an IPv4 address.
		"64:ff9b:1::a00:1":    false, // local-use NAT64 of 10.0.0.1
		"2002:7f00:1::1":      false, // 6to4 of 127.0.0.1
		"2002:808:808::1":     false, // 6to4 of 8.8.8.8: 6to4 is refused whatever it embeds
		"::7f00:1":            false, // IPv4-compatible ::127.0.0.1
		"::a00:1":             false, // IPv4-compatible ::10.0.0.1
		"::808:808":           false, // IPv4-compatible ::8.8.8.8
		"2001::1":             false, // Teredo
		"2001:0:4136:e378::1": false, // Teredo, with a server address
		"2001:1ff:ffff::1":    false, // end of 2001::/23 (IETF protocol assignments)

		// Other special-purpose and non-global-unicast blocks.
		"fec0::1": false, "feff::1": false, // site-local
		"100::1": false, "100::ffff:ffff:ffff:ffff": false, // discard-only
		"2001:db8::1": false, "3fff::1": false, // documentation
		"4000::1": false, "e000::1": false, "1::1": false, // outside 2000::/3, unallocated
		"192.0.2.1": false, "198.51.100.7": false, "203.0.113.255": false, // documentation
		"168.63.129.16": false, "::ffff:168.63.129.16": false, // Azure's wire server
		"192.88.99.1": false, "192.88.99.255": false, // 6to4 relay anycast

		// Just outside the new blocks: still public.
		"2001:200::1": true, "2001:4860:4860::8888": true, "2a00:1450:4001::1": true,
		"192.0.3.1": true, "198.51.101.1": true, "203.0.114.1": true,
		"168.63.129.15": true, "168.63.129.17": true, "192.88.98.1": true, "192.88.100.1": true,
	} {
		require.Equal(t, public, webhook.IsPublicAddr(netip.MustParseAddr(addr)), addr)
	}
}

// The guard runs on the resolved address at connect time: a literal
// private address, a loopback server and a host name that resolves to
// loopback are all refused before any byte is sent, in every spelling: an
// IPv6 zone, an IPv4-mapped or IPv4-compatible address, 6to4 and NAT64.
func TestSSRFGuardRefusesAtDialTime(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	handler := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) })
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]

	guarded := webhook.NewHTTPClient(2*time.Second, false)
	refused := []string{
		srv.URL,                          // 127.0.0.1
		"http://localhost:" + port,       // a name that resolves to loopback
		"http://[::1]:" + port,           // IPv6 loopback
		"http://10.0.0.1:80/",            // RFC 1918
		"http://169.254.169.254/latest/", // cloud metadata
		"http://100.64.0.1/",             // CGNAT
		"http://[::ffff:127.0.0.1]:" + port,
		"http://[::127.0.0.1]:" + port, // IPv4-compatible
		"http://[fe80::1%25lo]:80/",    // zoned link-local
		"http://[fd00::1%25lo]:80/",    // zoned unique local
		"http://[fe80::1%251]:80/",     // zoned by interface index
		"http://[64:ff9b:1::a00:1]/",   // local-use NAT64 of 10.0.0.1
		"http://[2002:7f00:1::1]/",     // 6to4 of 127.0.0.1
		"http://[2001::1]/",            // Teredo
		"http://[fec0::1]/",            // site-local
		"http://[100::1]/",             // discard-only
		"http://192.0.2.1/",            // documentation
		"http://168.63.129.16/",        // Azure's wire server
		"http://192.88.99.1/",          // 6to4 relay anycast
	}
	// A receiver on IPv6 loopback, reached before the fix as [::1%lo]: the
	// zoned address matched no blocked prefix.
	if ln, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		srv6 := httptest.NewUnstartedServer(handler)
		srv6.Listener.Close()
		srv6.Listener = ln
		srv6.Start()
		t.Cleanup(srv6.Close)
		port6 := srv6.URL[strings.LastIndex(srv6.URL, ":")+1:]
		refused = append(refused, "http://[::1%25lo]:"+port6, "http://[::1%251]:"+port6)
	}
	for _, url := range refused {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, strings.NewReader("{}"))
		require.NoError(t, err)
		_, err = guarded.Do(req)
		require.ErrorIs(t, err, webhook.ErrForbiddenAddress, url)
	}
	// Numeric host names that inet_aton reads as 127.0.0.1. ValidateURL
	// refuses them; should one be delivered anyway, the Go resolver does not
	// read them as addresses (a DNS lookup fails) and a C resolver does,
	// which the guard then refuses: either way nothing is sent.
	for _, host := range []string{"2130706433", "0x7f.1", "017700000001", "0x7f000001", "127.1"} {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+host+":"+port+"/", strings.NewReader("{}"))
		require.NoError(t, err)
		_, err = guarded.Do(req)
		require.Error(t, err, host)
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
		"https://hooks.example.com:65535/":  true,
		"https://hooks.example.com:0/":      false,
		"https://hooks.example.com:99999/":  false,
		"https://hooks.example.com:00443/":  true,
		"ftp://hooks.example.com/":          false,
		"HTTPS://hooks.example.com/":        false,
		"https://user:pw@hooks.example.com": false,
		"https:///nohost":                   false,
		"https://example.com/#frag":         false,
		"not a url":                         false,

		// What an operator reads in the console and the CLI is the URL
		// called: no control character, no bidirectional override.
		"https://hooks.example.com/h\u202egnp.exe":   false,
		"https://hooks.example.com/a\u2066b":         false,
		"https://hooks.example.com/a\u200fb":         false,
		"https://hooks.example.com/\x1b[2J":          false,
		"https://hooks.example.com/\u0085":           false,
		"https://hooks.example.com/\xff":             false,
		"https://hooks.example.com/caf\u00e9/\u65e5": true,
		"http://127.0.0.1/":                          false,
		"http://[::1]/":                              false,
		"http://169.254.169.254/":                    false,
		"http://8.8.8.8/":                            true,
		"http://[2606:4700:4700::1111]/":             true,

		// IPv6 zones, refused whatever the address.
		"http://[::1%25lo]:29999/":            false,
		"http://[fe80::1%25eth0]/":            false,
		"http://[fd00::1%25eth0]/":            false,
		"http://[fc00::1%251]/":               false,
		"http://[2606:4700:4700::1111%25lo]/": false,
		"http://127.0.0.1%25lo/":              false,

		// Literal addresses in special-purpose blocks.
		"http://[::ffff:127.0.0.1]/":  false,
		"http://[::ffff:7f00:1]/":     false,
		"http://[::127.0.0.1]/":       false,
		"http://[64:ff9b::a00:1]/":    false,
		"http://[64:ff9b:1::a00:1]/":  false,
		"http://[2002:a00:1::1]/":     false,
		"http://[2001::1]/":           false,
		"http://[2001:db8::1]/":       false,
		"http://[fec0::1]/":           false,
		"http://[100::1]/":            false,
		"http://192.0.2.1/":           false,
		"http://198.51.100.1/":        false,
		"http://203.0.113.1/":         false,
		"http://255.255.255.255/":     false,
		"http://[2001:4860::8888]/":   true,
		"http://203.0.114.1:8443/abc": true,

		// Numeric host names inet_aton (and browsers) read as 127.0.0.1.
		"http://2130706433/":    false,
		"http://0x7f.1/":        false,
		"http://0X7F.0.0.1/":    false,
		"http://017700000001/":  false,
		"http://0x7f000001/":    false,
		"http://127.1/":         false,
		"http://127.0.0.1./":    false,
		"http://8.8.8.8./":      false,
		"http://hooks.0x1/":     false,
		"http://1password.com/": true,
		"http://0x7f.example/":  true,
		"http://hooks.123abc/":  true,

		// Names only a local network resolves.
		"http://localhost:8080/":             false,
		"http://LOCALHOST./":                 false,
		"http://api.localhost/":              false,
		"http://printer.local/":              false,
		"http://router.home.arpa/":           false,
		"http://metadata.google.internal/":   false,
		"http://metadata/computeMetadata/v1": false,
		"http://kubernetes./":                false,
		"http://localhost.example.com/":      true,
		"http://internal.example.com/":       true,
		"http://hooks.example.local.com/":    true,
	} {
		err := webhook.ValidateURL(url, false)
		require.Equal(t, ok, err == nil, "%s: %v", url, err)
	}
	// Refused, they name the setting that allows them.
	for _, url := range []string{"http://127.0.0.1:9000/", "http://localhost:9000/"} {
		err := webhook.ValidateURL(url, false)
		require.ErrorContains(t, err, "COMPUTE_WEBHOOK_ALLOW_PRIVATE=true", url)
	}
	require.NoError(t, webhook.ValidateURL("http://127.0.0.1:9000/", true), "allowed for local development")
	require.NoError(t, webhook.ValidateURL("http://localhost:9000/", true), "so are local names")
	require.Error(t, webhook.ValidateURL("http://[fe80::1%25eth0]:9000/", true), "zones are refused even then")
	require.Error(t, webhook.ValidateURL("http://2130706433:9000/", true), "so are numeric host names")
}

// Registration (create and patch) refuses the forms ValidateURL refuses
// with INVALID_ARGUMENT, with the guard on and, for zones and numeric
// hosts, off.
func TestValidateURLRegistrationInvalidArgument(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{}) // AllowPrivate
	strict := webhook.New(f.pg.Pool, commands.New(f.pg.Pool, commands.Config{}), webhook.Config{}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	ep := f.createEndpoint(t, acmeMember, "https://x.example/")
	for _, c := range []struct {
		svc *webhook.Service
		url string
	}{
		{f.svc, "http://[::1%25lo]:29999/"},
		{f.svc, "http://[fe80::1%25eth0]/"},
		{f.svc, "http://2130706433/"},
		{strict, "http://[::1%25lo]:29999/"},
		{strict, "http://[fd00::1%25eth0]/"},
		{strict, "http://0x7f.1/"},
		{strict, "http://017700000001/"},
		{strict, "http://[::ffff:127.0.0.1]/"},
		{strict, "http://[2002:7f00:1::1]/"},
		{strict, "http://[64:ff9b:1::a00:1]/"},
	} {
		_, err := c.svc.CreateEndpoint(ctx, acmeMember, webhook.CreateEndpoint{URL: c.url})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "create %s: %v", c.url, err)
		_, err = c.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{URL: &c.url})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "patch %s: %v", c.url, err)
	}
}

// A scheme in capitals (HTTPS://…) is a valid URL that url.Parse reads as
// https, but the database stores only URLs beginning with a lower-case
// http:// or https://: create and patch refuse it saying so, where they
// answered with the name of the table's check constraint.
func TestURLSchemeMustBeLowerCase(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	ep := f.createEndpoint(t, acmeMember, "https://x.example/")
	for _, u := range []string{"HTTPS://hooks.example.com/x", "Http://hooks.example.com/x"} {
		_, err := f.svc.CreateEndpoint(ctx, acmeMember, webhook.CreateEndpoint{URL: u})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "create %s: %v", u, err)
		require.Contains(t, err.Error(), "lower case", "create %s", u)
		_, err = f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{URL: &u})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "patch %s: %v", u, err)
		require.Contains(t, err.Error(), "lower case", "patch %s", u)
	}
}

// A description is shown to operators in the console and the CLI: one with
// a terminal escape sequence, a line break or a bidirectional override is
// refused on create and on patch; printable text of any script is kept.
func TestDescriptionMustBePrintable(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	ep := f.createEndpoint(t, acmeMember, "https://x.example/")
	for _, d := range []string{"ci \x1b]0;pwned\a", "a\x1b[2J", "two\nlines", "a\rb", "tab\there", "x\u202egnp.exe", "\u2067y", "c1 \u009b"} {
		_, err := f.svc.CreateEndpoint(ctx, acmeMember, webhook.CreateEndpoint{URL: "https://x.example/", Description: d})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "create %q: %v", d, err)
		_, err = f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{Description: &d})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "patch %q: %v", d, err)
	}
	ok := "Deploys of team Müller – 日本語, 50% (prod)"
	got, err := f.svc.CreateEndpoint(ctx, acmeMember, webhook.CreateEndpoint{URL: "https://x.example/", Description: ok})
	require.NoError(t, err)
	require.Equal(t, ok, got.Description)
}

// What the tenant sees of a refused attempt is the generic text: not the
// address the guard refused, nor the resolver. The delivery goes to a host
// name (registration cannot refuse it) that resolves to loopback.
func TestAttemptErrorStoredForTenantIsGeneric(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{Client: webhook.NewHTTPClient(2*time.Second, false)})
	ctx := context.Background()
	rcv := newReceiver(t, respond{status: http.StatusOK})
	port := rcv.URL[strings.LastIndex(rcv.URL, ":")+1:]
	ep := f.createEndpoint(t, acmeMember, "http://localhost:"+port+"/hook", "reservation.booked")
	ev := f.emit(t, "acme", "reservation.booked")
	d := f.scheduled(t, ep.ID, ev)
	require.Equal(t, 1, f.runWorker(t))
	require.Empty(t, rcv.requests())

	page, err := f.svc.ListAttempts(ctx, acmeMember, ep.ID, "", 0)
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, "destination address is not allowed", page.Items[0].Error)
	got := f.delivery(t, d.ID)
	require.NotNil(t, got.LastError)
	require.Equal(t, "destination address is not allowed", *got.LastError)
}
