package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrForbiddenAddress is returned (wrapped) when a delivery would connect to
// an address the SSRF guard refuses.
var ErrForbiddenAddress = errors.New("webhook: destination address is not public")

// blockedPrefixes are the networks a webhook may never reach: a tenant
// registering http://10.0.0.5/ or a hostname resolving to 127.0.0.1 must not
// be able to make the control plane call its own internals or the cloud
// metadata service. IPv4-mapped IPv6 addresses are unmapped before the check.
var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",      // "this network", unspecified
		"10.0.0.0/8",     // RFC 1918
		"100.64.0.0/10",  // CGNAT (RFC 6598)
		"127.0.0.0/8",    // loopback
		"169.254.0.0/16", // link-local, includes 169.254.169.254 (metadata)
		"172.16.0.0/12",  // RFC 1918
		"192.0.0.0/24",   // IETF protocol assignments
		"192.168.0.0/16", // RFC 1918
		"198.18.0.0/15",  // benchmarking
		"224.0.0.0/4",    // multicast
		"240.0.0.0/4",    // reserved, broadcast
		"::/128",         // unspecified
		"::1/128",        // loopback
		"64:ff9b::/96",   // NAT64: would reach any IPv4 address, private ones included
		"fc00::/7",       // unique local, includes fd00:ec2::254 (AWS metadata)
		"fe80::/10",      // link-local
		"ff00::/8",       // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// IsPublicAddr reports whether ip may be the destination of a delivery.
func IsPublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() {
		return false
	}
	for _, p := range blockedPrefixes {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// guardControl is a net.Dialer.Control that runs after name resolution, on
// the address actually being connected to. Checking there (and not only
// when the URL is registered) defeats DNS rebinding: a name that resolved to
// a public address at registration and to 127.0.0.1 now is refused now.
func guardControl(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable address %q", ErrForbiddenAddress, address)
	}
	if !IsPublicAddr(ap.Addr()) {
		return fmt.Errorf("%w: %s", ErrForbiddenAddress, ap.Addr())
	}
	return nil
}

// NewHTTPClient returns the client deliveries use: the given overall timeout,
// no redirects followed (a 3xx is a failed attempt; following it would let
// a public endpoint bounce the request to a private one), no proxy from the
// environment (a proxy would connect on our behalf, past the guard), and,
// unless allowPrivate, the SSRF guard on every connection.
func NewHTTPClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = guardControl
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: timeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ValidateURL checks an endpoint URL at registration: http or https, a host,
// no user info (credentials in URLs leak into logs), no fragment. When
// allowPrivate is false, a literal IP address must be public; host names are
// checked when each delivery connects, since what they resolve to changes.
func ValidateURL(raw string, allowPrivate bool) error {
	const maxURL = 2048
	if len(raw) > maxURL {
		return fmt.Errorf("url is longer than %d bytes", maxURL)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url is not a valid URL")
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("url must use https or http")
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("url must have a host")
	case u.User != nil:
		return fmt.Errorf("url must not contain user info")
	case u.Fragment != "":
		return fmt.Errorf("url must not contain a fragment")
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil && !allowPrivate && !IsPublicAddr(ip) {
		return fmt.Errorf("url points at a non-public address %s", ip)
	}
	return nil
}
