package commands_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// Audit reports, as domain values, the node whose assignment job has been
// open longer than the period, and no invariant violation on a sound fleet.
func TestAuditNodeDriftAndInvariants(t *testing.T) {
	t.Parallel()
	f := setup(t)
	audit := &commands.Audit{Pool: f.d.Pool}
	f.node(t, "n1", exclusive)
	f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1})
	drift, err := audit.NodeDrift(f.ctx, 5*time.Minute)
	require.NoError(t, err)
	require.Empty(t, drift)
	f.d.AdvanceSimClock(t, 5*time.Minute+time.Second)
	drift, err = audit.NodeDrift(f.ctx, 5*time.Minute)
	require.NoError(t, err)
	require.Len(t, drift, 1)
	require.Equal(t, "n1", drift[0].NodeID)
	require.Equal(t, int64(1), drift[0].Generation)
	require.Zero(t, drift[0].ObservedGeneration)
	require.Equal(t, int64(1), drift[0].OpenJobs)
	require.False(t, drift[0].Connected)
	violations, err := audit.Invariants(f.ctx)
	require.NoError(t, err)
	require.Empty(t, violations)
}

// NodeExists tells a registered node from an unknown one without an error.
func TestNodeExists(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	ok, err := f.h.NodeExists(f.ctx, "n1")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = f.h.NodeExists(f.ctx, "nope")
	require.NoError(t, err)
	require.False(t, ok)
}

// AnyExists is false on an empty database and true once a token exists,
// revoked or not.
func TestTokensAnyExists(t *testing.T) {
	t.Parallel()
	tokens, _ := tokenSetup(t)
	ok, err := tokens.AnyExists(t.Context())
	require.NoError(t, err)
	require.False(t, ok)
	created, err := tokens.CreateToken(t.Context(), tokenOperator, "acme", "bob", core.RoleMember)
	require.NoError(t, err)
	_, err = tokens.RevokeToken(t.Context(), tokenOperator, created.ID)
	require.NoError(t, err)
	ok, err = tokens.AnyExists(t.Context())
	require.NoError(t, err)
	require.True(t, ok)
}
