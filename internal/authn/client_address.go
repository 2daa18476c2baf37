package authn

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientAddresses says which client address a request's failed
// authentications count against (FailureLimiter). By default that is the
// connection's peer address, never a header a client could invent. Behind
// a load balancer or reverse proxy every client has the proxy's address,
// so one client guessing tokens would have everyone's uncached tokens
// answered 429: the proxies named as trusted (COMPUTE_TRUSTED_PROXIES)
// are believed about X-Forwarded-For instead. The zero value trusts none.
type ClientAddresses struct {
	trusted []netip.Prefix
}

// NewClientAddresses trusts the proxies at the given addresses or CIDR
// prefixes (192.0.2.10, 10.0.0.0/8, fd00::/8).
func NewClientAddresses(proxies []string) (ClientAddresses, error) {
	var a ClientAddresses
	for _, p := range proxies {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		prefix, err := ParseProxy(p)
		if err != nil {
			return ClientAddresses{}, err
		}
		a.trusted = append(a.trusted, prefix)
	}
	return a, nil
}

// ParseProxy reads one trusted proxy: an address (a prefix of its full
// length) or a CIDR prefix.
func ParseProxy(p string) (netip.Prefix, error) {
	if strings.Contains(p, "/") {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("trusted proxy %q: not an address or CIDR prefix", p)
		}
		return prefix.Masked(), nil
	}
	addr, err := netip.ParseAddr(p)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("trusted proxy %q: not an address or CIDR prefix", p)
	}
	addr = addr.Unmap()
	return netip.PrefixFrom(addr, addr.BitLen()), nil
}

// Key is the address r's failures are counted against. The peer address,
// unless the peer is a trusted proxy: then the nearest address in
// X-Forwarded-For that no trusted proxy holds, read from the right, where
// each proxy appends the peer it saw (what is further left a client may
// have written itself). A hop that is not an address, or a chain of
// trusted proxies only, leaves the peer's. An IPv6 client is counted by
// its /64, which one host usually holds whole.
func (a ClientAddresses) Key(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if a.trusts(addr) {
		if client, ok := a.forwardedFor(r.Header.Values("X-Forwarded-For")); ok {
			addr = client
		}
	}
	if addr.Is6() {
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}

// forwardedFor is the nearest untrusted hop of the X-Forwarded-For chain
// (its headers in order, each a comma-separated list).
func (a ClientAddresses) forwardedFor(headers []string) (netip.Addr, bool) {
	var hops []string
	for _, h := range headers {
		hops = append(hops, strings.Split(h, ",")...)
	}
	for i := len(hops) - 1; i >= 0; i-- {
		hop := strings.TrimSpace(hops[i])
		addr, err := netip.ParseAddr(hop)
		if err != nil {
			ap, err := netip.ParseAddrPort(hop)
			if err != nil {
				return netip.Addr{}, false
			}
			addr = ap.Addr()
		}
		addr = addr.Unmap()
		if !a.trusts(addr) {
			return addr, true
		}
	}
	return netip.Addr{}, false
}

func (a ClientAddresses) trusts(addr netip.Addr) bool {
	for _, p := range a.trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}
