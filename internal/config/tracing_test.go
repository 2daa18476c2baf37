package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Tracing is off unless an OTLP endpoint is set, through the standard
// OpenTelemetry variables or their COMPUTE_ spelling.
func TestTracingSettings(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	c, err := Load()
	require.NoError(t, err)
	require.Empty(t, c.OTLPEndpoint, "no tracing by default")
	require.Empty(t, c.OTLPTracesEndpoint)

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://otel-collector:4318")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "https://traces.example.com/v1/traces")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, "http://otel-collector:4318", c.OTLPEndpoint)
	require.Equal(t, "https://traces.example.com/v1/traces", c.OTLPTracesEndpoint)

	t.Setenv("COMPUTE_OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector.internal:4318")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, "http://collector.internal:4318", c.OTLPEndpoint, "the COMPUTE_ spelling wins")

	for _, bad := range []string{"otel-collector:4318", "grpc://otel-collector:4317", "http://"} {
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", bad)
		_, err := Load()
		require.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", bad)
	}
}
