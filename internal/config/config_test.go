package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDefaultsAndOverrides(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://x/y")
	t.Setenv("COMPUTE_ADDR", "127.0.0.1:9999")
	t.Setenv("COMPUTE_ROLES", "api,worker")
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, "postgres://x/y", c.DatabaseURL, "the unprefixed DATABASE_URL is honoured")
	require.Equal(t, "127.0.0.1:9999", c.Addr)
	require.Equal(t, 24*time.Hour, c.IdempotencyTTL)
	require.True(t, c.Has("worker"))
	require.False(t, c.Has("gateway"))

	t.Setenv("COMPUTE_DATABASE_URL", "postgres://prefixed/z")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, "postgres://prefixed/z", c.DatabaseURL, "the prefixed name wins")
}

func TestUnknownRoleIsRejected(t *testing.T) {
	t.Setenv("COMPUTE_ROLES", "api,scheduler")
	_, err := Load()
	require.ErrorContains(t, err, "scheduler")
}
