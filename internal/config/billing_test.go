package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The billing sink needs a URL and a Standard Webhooks secret together;
// anything else is refused at start rather than failing silently later.
func TestBillingSettings(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // 24 bytes
	c, err := Load()
	require.NoError(t, err)
	require.Empty(t, c.BillingURL, "no billing sink by default")
	require.Equal(t, 15*time.Second, c.BillingTimeout)

	t.Setenv("COMPUTE_BILLING_URL", "https://billing.example.com/usage")
	_, err = Load()
	require.ErrorContains(t, err, "COMPUTE_BILLING_SECRET")
	for _, bad := range []string{"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_c2hvcnQ=", "whsec_!!"} {
		t.Setenv("COMPUTE_BILLING_SECRET", bad)
		_, err = Load()
		require.ErrorContains(t, err, "COMPUTE_BILLING_SECRET", bad)
	}
	t.Setenv("COMPUTE_BILLING_SECRET", secret)
	c, err = Load()
	require.NoError(t, err)
	require.Equal(t, "https://billing.example.com/usage", c.BillingURL)

	// A URL the sink cannot POST to is refused at start too: it used to
	// start the server without any billing sink, with one log line, while
	// reservations kept ending unbilled.
	for _, bad := range []string{"billing.example.com/usage?api_key=t0k3n", "htps://billing.example.com", "https:///usage", "billing:8443"} {
		t.Setenv("COMPUTE_BILLING_URL", bad)
		_, err = Load()
		require.ErrorContains(t, err, "COMPUTE_BILLING_URL", bad)
		require.NotContains(t, err.Error(), "t0k3n", "the URL's credential is not echoed")
	}

	t.Setenv("COMPUTE_BILLING_URL", "")
	_, err = Load()
	require.ErrorContains(t, err, "neither", "a secret without a URL is a mistake")
}
