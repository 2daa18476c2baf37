package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The JetStream sink is off unless COMPUTE_NATS_URL is set; its stream
// settings have defaults, and values JetStream would refuse are refused at
// start.
func TestNATSSettings(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Empty(t, c.NATSURL, "no JetStream sink by default")
	require.Equal(t, "COMPUTE_EVENTS", c.NATSStream)
	require.Equal(t, "file", c.NATSStorage)
	require.Equal(t, 1, c.NATSReplicas)
	require.Equal(t, 720*time.Hour, c.NATSMaxAge)
	require.Equal(t, 2*time.Minute, c.NATSDuplicateWindow)

	t.Setenv("COMPUTE_NATS_CREDS", "/etc/compute/nats.creds")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_NATS_URL", "credentials without a server are a mistake")

	t.Setenv("COMPUTE_NATS_URL", "nats://nats-1:4222,nats://nats-2:4222")
	t.Setenv("COMPUTE_NATS_MAX_AGE", "0")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, "nats://nats-1:4222,nats://nats-2:4222", c.NATSURL)
	require.Zero(t, c.NATSMaxAge, "0 keeps messages")

	for name, bad := range map[string]string{
		"COMPUTE_NATS_STREAM": "compute.events", "COMPUTE_NATS_STORAGE": "disk", "COMPUTE_NATS_REPLICAS": "0",
		"COMPUTE_NATS_DUPLICATE_WINDOW": "0s", "COMPUTE_NATS_MAX_AGE": "1m",
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, bad)
			_, err := Load()
			require.ErrorContains(t, err, name)
		})
	}
}

// Event streams are served from PostgreSQL unless COMPUTE_STREAM_SOURCE
// says nats, which needs the NATS server.
func TestStreamSource(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, StreamSourcePostgres, c.StreamSource)

	t.Setenv("COMPUTE_STREAM_SOURCE", "nats")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_NATS_URL", "nats without a server")

	t.Setenv("COMPUTE_NATS_URL", "nats://nats-1:4222")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, StreamSourceNATS, c.StreamSource)

	t.Setenv("COMPUTE_STREAM_SOURCE", "jetstream")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_STREAM_SOURCE")
}
