package webhook

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bettercompute/compute/core"
)

// ErrForbiddenAddress is returned (wrapped) when a delivery would connect to
// an address the SSRF guard refuses.
var ErrForbiddenAddress = errors.New("webhook: destination address is not public")

// blockedPrefixes are the networks a webhook may never reach even though
// they pass the global-unicast rule in IsPublicAddr: a tenant registering
// http://10.0.0.5/ or a hostname resolving to 127.0.0.1 must not be able to
// make the control plane call its own internals or the cloud metadata
// service. Some entries are also caught by that rule; they stay listed so
// this table reads as the complete list of special-purpose blocks (IANA's
// IPv4 and IPv6 special-purpose address registries).
var blockedPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",          // "this network", unspecified
		"10.0.0.0/8",         // RFC 1918
		"100.64.0.0/10",      // CGNAT (RFC 6598)
		"127.0.0.0/8",        // loopback
		"169.254.0.0/16",     // link-local, includes 169.254.169.254 (metadata)
		"172.16.0.0/12",      // RFC 1918
		"192.0.0.0/24",       // IETF protocol assignments
		"192.0.2.0/24",       // documentation (TEST-NET-1)
		"192.88.99.0/24",     // 6to4 relay anycast (RFC 7526): relays into any IPv4 network
		"192.168.0.0/16",     // RFC 1918
		"198.18.0.0/15",      // benchmarking
		"198.51.100.0/24",    // documentation (TEST-NET-2)
		"203.0.113.0/24",     // documentation (TEST-NET-3)
		"224.0.0.0/4",        // multicast
		"240.0.0.0/4",        // reserved
		"255.255.255.255/32", // limited broadcast (inside 240/4; named for the reader)
		"168.63.129.16/32",   // Azure's wire server (metadata, DHCP, DNS, health probes) on every VM
		"::/128",             // unspecified
		"::1/128",            // loopback
		"::/96",              // IPv4-compatible ::a.b.c.d: embeds any IPv4 address
		"64:ff9b::/96",       // NAT64: would reach any IPv4 address, private ones included
		"64:ff9b:1::/48",     // local-use NAT64 (RFC 8215): the same, with an operator's translator
		"100::/64",           // discard-only (RFC 6666)
		"2001::/23",          // IETF protocol assignments, includes Teredo 2001::/32 (embeds IPv4)
		"2001:db8::/32",      // documentation
		"2002::/16",          // 6to4: embeds any IPv4 address, private ones included
		"3fff::/20",          // documentation (RFC 9637)
		"fc00::/7",           // unique local, includes fd00:ec2::254 (AWS metadata)
		"fe80::/10",          // link-local
		"fec0::/10",          // site-local (deprecated, still routed on some networks)
		"ff00::/8",           // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// globalUnicastV6 is the only IPv6 range IANA allocates for global unicast.
// netip.Addr.IsGlobalUnicast is true for every IPv6 address outside a few
// scopes (fec0::1 and 100::1 included), so IPv6 destinations must also lie
// here: an allow rule, so that a range nobody thought to block is refused.
var globalUnicastV6 = netip.MustParsePrefix("2000::/3")

// IsPublicAddr reports whether ip may be the destination of a delivery: a
// global unicast address outside every special-purpose block. The zone is
// dropped first, because netip.Prefix.Contains is false for any zoned
// address, so ::1%lo would otherwise pass every prefix check; the zone does
// not change which host the address is. IPv4-mapped IPv6 addresses are
// unmapped, so ::ffff:127.0.0.1 is judged as 127.0.0.1.
func IsPublicAddr(ip netip.Addr) bool {
	ip = ip.WithZone("").Unmap()
	if !ip.IsValid() || !ip.IsGlobalUnicast() {
		return false
	}
	if ip.Is6() && !globalUnicastV6.Contains(ip) {
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
// The address may carry a zone ([fe80::1%eth0]:443, from a URL registered
// before zones were refused, or from /etc/hosts); IsPublicAddr drops it
// before judging.
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

// maxResponseHeaderBytes bounds a receiver's response headers. A receiver
// needs a status line and a few headers; net/http's default bound, 10 MiB,
// let each attempt to a hostile receiver hold megabytes in the control
// plane's memory (24 receivers answering 8 MB of headers took a server from
// 45 MB to 279 MB resident), as the body snippet's bound does not.
const maxResponseHeaderBytes = 64 << 10

// NewHTTPClient returns the client deliveries use: the given overall timeout,
// no redirects followed (a 3xx is a failed attempt; following it would let
// a public endpoint bounce the request to a private one), no proxy from the
// environment (a proxy would connect on our behalf, past the guard),
// response headers of at most maxResponseHeaderBytes (more fails the
// attempt) and, unless allowPrivate, the SSRF guard on every connection.
func NewHTTPClient(timeout time.Duration, allowPrivate bool) *http.Client {
	dialer := &net.Dialer{Timeout: min(timeout, 10*time.Second), KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = guardControl
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            dialer.DialContext,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           100,
			MaxIdleConnsPerHost:    4,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    10 * time.Second,
			ResponseHeaderTimeout:  timeout,
			MaxResponseHeaderBytes: maxResponseHeaderBytes,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// ValidateURL checks an endpoint URL at registration: http or https, a host,
// no user info (credentials in URLs leak into logs), no fragment, no IPv6
// zone and no numeric host other than a canonical IP literal (see
// endsInNumber). When allowPrivate is false, a literal IP address must be
// public and a name must not be a local network's (localName); what other
// names resolve to is checked when each delivery connects, since it
// changes.
func ValidateURL(raw string, allowPrivate bool) error {
	const maxURL = 2048
	if len(raw) > maxURL {
		return fmt.Errorf("url is longer than %d bytes", maxURL)
	}
	if !core.Printable(raw) {
		// url.Parse refuses ASCII controls but takes U+202E and its kind,
		// which make the URL an operator reads (console, CLI) another one.
		return fmt.Errorf("url must be printable UTF-8, with no control or format characters")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url is not a valid URL")
	}
	switch {
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("url must use https or http")
	case !strings.HasPrefix(raw, u.Scheme+":"):
		// url.Parse lowers the scheme, but the URL is stored and called
		// as given, and the table's check takes only lower case.
		return fmt.Errorf("url must begin with http:// or https:// in lower case")
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("url must have a host")
	case u.User != nil:
		return fmt.Errorf("url must not contain user info")
	case u.Fragment != "":
		return fmt.Errorf("url must not contain a fragment")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("url port must be 1 to 65535, not %s", p)
		}
	}
	host := u.Hostname()
	if strings.Contains(host, "%") {
		// An IPv6 zone ([fe80::1%25eth0]) only scopes link-local and
		// multicast addresses, none of which a webhook may reach; refusing
		// every zone keeps zoned forms out of the address checks entirely.
		return fmt.Errorf("url must not contain an IPv6 zone")
	}
	if endsInNumber(host) {
		return fmt.Errorf("url host must be a DNS name or a dotted-decimal IPv4 or bracketed IPv6 address")
	}
	if ip, err := netip.ParseAddr(host); err == nil && !allowPrivate && !IsPublicAddr(ip) {
		return fmt.Errorf("url points at a non-public address %s%s", ip, privateHint)
	}
	if !allowPrivate && localName(host) {
		return fmt.Errorf("url host %s is a name only a local network resolves%s", host, privateHint)
	}
	return nil
}

// privateHint ends the refusal of a local or private URL: whoever tries a
// receiver on their own machine (the webhook consumer example beside `make
// run`) learns the setting that allows it rather than only that it was
// refused.
const privateHint = "; a receiver on your own machine needs a server started with COMPUTE_WEBHOOK_ALLOW_PRIVATE=true (development only)"

// localSuffixes are the DNS names reserved for hosts of a local network:
// localhost and its subdomains (RFC 6761: always loopback), .local (mDNS,
// RFC 6762), .home.arpa (RFC 8375) and .internal (reserved by ICANN in 2024
// for private use; cloud metadata lives at metadata.google.internal).
var localSuffixes = []string{"localhost", "local", "home.arpa", "internal"}

// localName reports whether host, a name and not an IP literal, can only
// name a host of the network the control plane runs in: one of
// localSuffixes, or a single label (metadata, kubernetes), which a resolver
// completes with the machine's search domains. The dial-time guard refuses
// the private address such a name resolves to; refusing the name at
// registration tells the tenant at once instead of through failed
// deliveries, and keeps a name that resolves differently inside the
// control plane's network out of it.
func localName(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if !strings.Contains(host, ".") {
		return true
	}
	for _, s := range localSuffixes {
		if host == s || strings.HasSuffix(host, "."+s) {
			return true
		}
	}
	return false
}

// endsInNumber reports whether host, which netip.ParseAddr may have refused,
// is one a browser or the C library (inet_aton) would read as an IPv4
// address: its last label is decimal, octal (leading 0) or 0x-hex, as in
// 2130706433, 017700000001, 0x7f.1 or 127.1, all 127.0.0.1. No DNS name ends
// in such a label (no top-level domain is numeric), and allowing them would
// make registration judge one address while a getaddrinfo-based resolver
// dials another. The dial-time guard would still refuse a private result;
// this refuses the ambiguity up front. Canonical dotted-decimal addresses
// also end in a number; the caller checks those with netip right after.
func endsInNumber(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	host = strings.TrimSuffix(host, ".")
	label := host[strings.LastIndexByte(host, '.')+1:]
	if label == "" {
		return false
	}
	if rest, ok := strings.CutPrefix(strings.ToLower(label), "0x"); ok {
		return strings.Trim(rest, "0123456789abcdef") == ""
	}
	return strings.Trim(label, "0123456789") == ""
}
