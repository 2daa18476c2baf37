package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCORSOriginsAreExact(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Empty(t, c.CORSOrigins, "no CORS by default")

	t.Setenv("COMPUTE_CORS_ORIGINS", "https://console.example.com, http://localhost:3000,")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, []string{"https://console.example.com", "http://localhost:3000"}, c.CORSOrigins)

	for _, bad := range []string{"*", "https://*.example.com", "https://console.example.com/", "console.example.com",
		"https://console.example.com/ui", "ftp://example.com", "https://Console.example.com", "https://u:p@example.com"} {
		t.Setenv("COMPUTE_CORS_ORIGINS", bad)
		_, err := Load()
		require.ErrorContains(t, err, "COMPUTE_CORS_ORIGINS", bad)
	}
}

func TestRateLimitSettings(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Equal(t, 100.0, c.RateLimit, "on by default")
	require.Equal(t, 200, c.RateBurst)

	t.Setenv("COMPUTE_RATE_LIMIT", "50")
	t.Setenv("COMPUTE_RATE_BURST", "100")
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, 50.0, c.RateLimit)
	require.Equal(t, 100, c.RateBurst)

	t.Setenv("COMPUTE_RATE_BURST", "0")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_RATE_BURST")
	t.Setenv("COMPUTE_RATE_LIMIT", "0")
	_, err = Load()
	require.NoError(t, err, "no burst needed when the limit is off")
	t.Setenv("COMPUTE_RATE_LIMIT", "-1")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_RATE_LIMIT")
}
