package gateway_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The welcome carries the control plane's clock (compute_now(), here the
// simulated one, years from the gateway's own) when the session opened:
// the daemon judges its assignments' windows, which are in that time, by
// it rather than by the node's clock.
func TestWelcomeCarriesTheControlPlanesClock(t *testing.T) {
	t.Parallel()
	f := setup(t)
	cred := f.join("n1", "metal")
	_, url := f.liveGateway("gw1")
	want := f.d.Now(t)
	_, welcome := f.connect(url, cred.Token)
	require.NotNil(t, welcome.Now)
	require.WithinDuration(t, want, *welcome.Now, time.Second)
	require.True(t, welcome.Now.Equal(*f.session("n1").OpenedAt), "the session's open, %s", welcome.Now)
}
