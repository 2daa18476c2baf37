package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// PUT /v1/tenants/{t}/quotas/{r}: an unknown tenant is 404 NOT_FOUND with a
// clean message (no SQL detail), and a tenant id the token endpoint would
// reject is 400 INVALID_ARGUMENT, as there.
func TestSetQuotaTenantChecks(t *testing.T) {
	f := setupFleet(t)
	body := map[string]int{"max": 1}

	e := f.fails(t, http.StatusNotFound, core.CodeNotFound, http.MethodPut, "/v1/tenants/nobody/quotas/gpu", f.operator, body, nil)
	require.Contains(t, e.Message, "nobody")
	for _, leak := range []string{"Key (", "tenant_id", "table", "violates", "constraint"} {
		require.NotContains(t, e.Message, leak)
	}

	for _, bad := range []string{"Acme", "-acme", "ac_me", strings.Repeat("a", 64)} {
		e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPut, "/v1/tenants/"+bad+"/quotas/gpu", f.operator, body, nil)
		require.Contains(t, e.Message, "tenant")
		require.NotContains(t, e.Message, "Key (")
	}

	f.ok(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/gpu", f.operator, body, nil)
}
