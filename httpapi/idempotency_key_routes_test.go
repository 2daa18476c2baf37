package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A write whose description lists no Idempotency-Key does nothing with
// one (docs/openapi.yaml, "Requests"), which is only right while every such
// write is safe to send again as it is: its repeat, under the same key,
// writes no event (a no-op, the work found done, or a refusal). A write
// added later that acts again on a repeat must keep answers for keys, or
// refuse them as the routes that mint a secret do. Each route is sent
// twice, in order, on one fleet; the ones whose first send acted are
// counted, so the sweep cannot pass by refusing everything.
func TestWritesWithoutAKeyRepeatSafely(t *testing.T) {
	t.Parallel()
	f := setupIgnoredInputFleet(t)
	bodies := f.writeBodies()
	routes := writeRoutes(t, f.s.e)
	events := func() int {
		t.Helper()
		var n int
		require.NoError(t, f.s.pg.Pool.QueryRow(t.Context(), "SELECT count(*) FROM outbox").Scan(&n))
		return n
	}
	acted := 0
	for _, route := range slices.Sorted(func(yield func(string) bool) {
		for r := range routes {
			if !yield(r) {
				return
			}
		}
	}) {
		if routes[route].idempotencyKey {
			continue // it keeps the answer for a key: commands/idempotency_test.go
		}
		method, rpath, _ := strings.Cut(route, " ")
		p, token := f.path(t, rpath)
		hdr := map[string]string{"Idempotency-Key": "repeat-" + route}
		first := f.sendWith(t, method, p, token, bodies[route], hdr)
		before := events()
		again := f.sendWith(t, method, p, token, bodies[route], hdr)
		require.Equal(t, before, events(), "%s repeated under one key wrote again: %d then %d %s",
			route, first.status, again.status, again.body)
		require.Less(t, again.status, http.StatusInternalServerError, "%s: %s", route, again.body)
		if first.status < 300 {
			acted++
		}
	}
	require.GreaterOrEqual(t, acted, 15, "routes whose first send acted")
}
