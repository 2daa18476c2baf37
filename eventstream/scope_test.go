package eventstream_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
)

func TestScopeRejectsMalformedTypes(t *testing.T) {
	t.Parallel()
	member := core.Actor{Tenant: "acme", Identity: "bob", Role: core.RoleMember}
	for _, bad := range []string{"", "reservation.", ".booked", "Reservation.Booked", "a\x00b", "a b", "a..b"} {
		_, err := eventstream.ScopeFor(member, []string{bad})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%q", bad)
	}
	s, err := eventstream.ScopeFor(member, []string{"reservation.booked", "webhook_endpoint.disabled"})
	require.NoError(t, err)
	require.Equal(t, eventstream.Scope{Tenant: "acme", Types: []string{"reservation.booked", "webhook_endpoint.disabled"}}, s)
}
