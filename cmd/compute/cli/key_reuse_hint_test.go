package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// The same command line run again with the same --idempotency-key, but
// with a time relative to now, is a different request to the server
// (IDEMPOTENCY_KEY_REUSED): the answer says which flag made it differ and
// how to write it. With a fresh key (none given) there is nothing to say,
// and with RFC 3339 times the repeat is the same request.
func TestKeyReusedSaysWhichRelativeTimeMoved(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error":{"code":"IDEMPOTENCY_KEY_REUSED","message":"idempotency key \"k1\" was used with a different request"}}`)
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")
	create := []string{"reservations", "create", "--pool", "p", "--gpus", "1"}

	_, errOut, code := inv.run(append(create, "--start", "now", "--duration", "1h", "--idempotency-key", "k1")...)
	require.Equal(t, exitConflict, code)
	require.Contains(t, errOut, "(IDEMPOTENCY_KEY_REUSED, HTTP 422)\n--start now: a time relative to now is a new time on every run")
	require.Contains(t, errOut, "give its times as RFC 3339")

	_, errOut, _ = inv.run(append(create, "--start", "2030-01-01T00:00:00Z", "--end", "+2h", "--idempotency-key", "k1")...)
	require.Contains(t, errOut, "\n--end +2h: a time relative to now")

	_, errOut, code = inv.run("reservations", "extend", "rsv_1", "--end", "+1h", "--idempotency-key", "k1")
	require.Equal(t, exitConflict, code)
	require.Contains(t, errOut, "\n--end +1h: a time relative to now")

	for _, args := range [][]string{
		append(create, "--start", "now", "--duration", "1h"),
		append(create, "--start", "2030-01-01T00:00:00Z", "--end", "2030-01-01T01:00:00Z", "--idempotency-key", "k1"),
	} {
		_, errOut, code = inv.run(args...)
		require.Equal(t, exitConflict, code)
		require.NotContains(t, errOut, "relative to now", "%v", args)
	}
}
