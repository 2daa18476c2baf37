package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTrustedProxies(t *testing.T) {
	c, err := Load()
	require.NoError(t, err)
	require.Empty(t, c.TrustedProxies, "no proxy is trusted by default")

	t.Setenv("COMPUTE_TRUSTED_PROXIES", "10.0.0.0/8, 192.0.2.1,fd00::/8")
	c, err = Load()
	require.NoError(t, err)
	require.Len(t, c.TrustedProxies, 3)

	for _, bad := range []string{"lb.example.com", "10.0.0.0/40", "10.0.0.1:443"} {
		t.Setenv("COMPUTE_TRUSTED_PROXIES", bad)
		_, err := Load()
		require.ErrorContains(t, err, "COMPUTE_TRUSTED_PROXIES", bad)
	}
}
