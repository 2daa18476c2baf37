package httpapi_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// A query time is RFC 3339 as a body's is: an offset of 24 hours or of 60
// minutes, or a fraction after a comma, which Go's parser takes and RFC
// 3339 does not, is 400, not read as a time a day or an hour away.
func TestQueryTimeOutsideRFC3339IsRefused(t *testing.T) {
	t.Parallel()
	s := setupClasses(t)
	var quota struct{ Position string }
	s.mustCall(t, http.StatusOK, http.MethodPut, "/v1/tenants/acme/quotas/gpu", s.operator, map[string]int{"max": 3}, &quota)
	s.catchUp(t, quota.Position)
	path := "/v1/devices/GPU-n1-0/holders?at="
	s.mustCall(t, http.StatusOK, http.MethodGet, path+url.QueryEscape("2030-01-01T12:00:00.5+23:59"), s.operator, nil, nil)
	for _, at := range []string{"2030-01-01T12:00:00+24:00", "2030-01-01T12:00:00-05:60", "2030-01-01T12:00:00,5Z"} {
		r := s.call(t, http.MethodGet, path+url.QueryEscape(at), s.operator, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", at, r.body)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code, at)
	}
}
