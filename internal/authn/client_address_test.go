package authn_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/authn"
)

// A failure counts against the connection's peer, unless the peer is a
// trusted proxy: then against the nearest untrusted hop of
// X-Forwarded-For, read from the right, so that a client behind the proxy
// cannot pick its own bucket by writing the header's left end, and every
// client behind the load balancer does not share the balancer's.
func TestClientAddressKey(t *testing.T) {
	t.Parallel()
	trusting, err := authn.NewClientAddresses([]string{"10.0.0.0/8", " 192.0.2.1 ", "", "fd00::/8"})
	require.NoError(t, err)
	var none authn.ClientAddresses
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want, none string
	}{
		{"no proxy", "198.51.100.7:4000", nil, "198.51.100.7", "198.51.100.7"},
		{"an untrusted peer's header is not believed", "198.51.100.7:4000", []string{"203.0.113.9"}, "198.51.100.7", "198.51.100.7"},
		{"a trusted balancer's client", "10.1.2.3:4000", []string{"203.0.113.9"}, "203.0.113.9", "10.1.2.3"},
		{"what the client wrote on the left is passed over", "10.1.2.3:4000", []string{"1.2.3.4, 203.0.113.9"}, "203.0.113.9", "10.1.2.3"},
		{"a chain of trusted proxies", "192.0.2.1:4000", []string{"203.0.113.9, 10.9.9.9", "10.0.0.5"}, "203.0.113.9", "192.0.2.1"},
		{"trusted hops only: the peer", "10.1.2.3:4000", []string{"10.0.0.5"}, "10.1.2.3", "10.1.2.3"},
		{"a hop that is not an address: the peer", "10.1.2.3:4000", []string{"203.0.113.9, bogus"}, "10.1.2.3", "10.1.2.3"},
		{"a hop with a port", "10.1.2.3:4000", []string{"203.0.113.9:5555"}, "203.0.113.9", "10.1.2.3"},
		{"no header from a trusted peer", "10.1.2.3:4000", nil, "10.1.2.3", "10.1.2.3"},
		{"an IPv6 client by its /64", "[fd00::1]:4000", []string{"2001:db8:1:2:3:4:5:6"}, "2001:db8:1:2::/64", "fd00::/64"},
		{"an IPv4-mapped peer", "[::ffff:10.1.2.3]:4000", []string{"203.0.113.9"}, "203.0.113.9", "10.1.2.3"},
	} {
		r, err := http.NewRequest(http.MethodGet, "/", nil)
		require.NoError(t, err)
		r.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		require.Equal(t, tc.want, trusting.Key(r), tc.name)
		require.Equal(t, tc.none, none.Key(r), tc.name+", trusting no proxy")
	}
}

// A trusted proxy that is neither an address nor a CIDR prefix is refused.
func TestClientAddressesRefuseABadProxy(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"10.0.0.0/33", "proxy.example.com", "10.0.0.1:80", "*"} {
		_, err := authn.NewClientAddresses([]string{p})
		require.Error(t, err, p)
	}
}
