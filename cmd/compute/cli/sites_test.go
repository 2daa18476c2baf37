package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `sites list` and `sites get` show each site's version, which `sites
// update --if-match` takes: an operator had to ask for -o json to learn it.
func TestSitesShowTheVersionIfMatchTakes(t *testing.T) {
	t.Parallel()
	site := `{"id":"fra1","name":"Frankfurt","version":3,"createdAt":"2030-01-01T00:00:00Z"}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/sites" {
			fmt.Fprintf(w, `{"items":[%s],"nextCursor":""}`, site)
			return
		}
		fmt.Fprint(w, site)
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")
	for _, args := range [][]string{{"sites", "list"}, {"sites", "get", "fra1"}} {
		out, errOut, code := inv.run(args...)
		require.Equal(t, 0, code, errOut)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		require.Len(t, lines, 2, out)
		require.Equal(t, []string{"ID", "NAME", "VERSION", "CREATED"}, strings.Fields(lines[0]), args)
		require.Equal(t, "3", strings.Fields(lines[1])[2], args)
	}
}
