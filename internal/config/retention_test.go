package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRetentionSettings(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, 30*24*time.Hour, c.EventRetention)
	require.Equal(t, 7*24*time.Hour, c.WorkRetention)
	require.Equal(t, 7*24*time.Hour, c.WebhookAttemptRetention)
	require.Equal(t, 10*time.Minute, c.PruneEvery)

	t.Setenv("COMPUTE_EVENT_RETENTION", "0")
	c, err = Load()
	require.NoError(t, err)
	require.Zero(t, c.EventRetention, "0 keeps events forever")

	t.Setenv("COMPUTE_WORK_RETENTION", "-1h")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_WORK_RETENTION")

	t.Setenv("COMPUTE_WORK_RETENTION", "1h")
	t.Setenv("COMPUTE_PRUNE_EVERY", "0")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_PRUNE_EVERY")
}
