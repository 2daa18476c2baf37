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
	// Well-formed, but no event this server writes (a typo), or a fleet
	// event that a tenant never sees: a filter that would match nothing.
	for _, unseen := range []string{"reservation.boked", "x.created", core.EventNodeDisconnected} {
		_, err := eventstream.ScopeFor(member, []string{unseen})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%q", unseen)
	}
	// A typo is answered with the types of its family the reader may see:
	// `compute events tail --type reservation.created` names
	// reservation.booked; a tenant is not shown the fleet's node types.
	_, err := eventstream.ScopeFor(member, []string{"reservation.created"})
	require.ErrorContains(t, err, "reservation.* are reservation.pending, reservation.booked")
	_, err = eventstream.ScopeFor(member, []string{"node.created"})
	require.NotContains(t, err.Error(), core.EventNodeDisconnected, "no fleet type to a tenant")
	operator := core.Actor{Identity: "root", Role: core.RoleOperator}
	_, err = eventstream.ScopeFor(operator, []string{"node.created"})
	require.ErrorContains(t, err, core.EventNodeDisconnected, "operators see fleet events, and are shown them")
	_, err = eventstream.ScopeFor(operator, []string{core.EventNodeDisconnected})
	require.NoError(t, err, "operators see fleet events")
	_, err = eventstream.ScopeFor(operator, []string{"x.created"})
	require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err))
	s, err := eventstream.ScopeFor(member, []string{"reservation.booked", "webhook_endpoint.disabled"})
	require.NoError(t, err)
	require.Equal(t, eventstream.Scope{Tenant: "acme", Types: []string{"reservation.booked", "webhook_endpoint.disabled"}}, s)
}
