package httpapi_test

import (
	"net/http"
	"net/url"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/queries"
)

// setupQuotaFleet is setupFleet with the tenant reads, so that a test reads
// a quota's version the way a client does: GET /v1/tenants/{t}/quotas.
func setupQuotaFleet(t *testing.T) *fleet {
	t.Helper()
	return setupFleet(t, func(r httpapi.Router) { httpapi.TenantReadRoutes(queries.New(r.Deps.Pool))(r) })
}

// quotaJSON is a quota as the list and the PUT return it.
type quotaJSON struct {
	Resource string `json:"resource"`
	Max      int64  `json:"max"`
	Used     int64  `json:"used"`
	Version  int64  `json:"version"`
}

// quotaOf reads acme's quota for resource from the list; ok is false when
// it has none.
func (f *fleet) quotaOf(t *testing.T, resource string) (q quotaJSON, ok bool) {
	t.Helper()
	var page struct {
		Items []quotaJSON `json:"items"`
	}
	f.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme/quotas", f.operator, nil, nil).decode(t, &page)
	for _, it := range page.Items {
		if it.Resource == resource {
			return it, true
		}
	}
	return quotaJSON{}, false
}

// Two operators read acme's gpu quota at one version and both raise it with
// If-Match: the first wins, the second is 409 CONFLICT and changes nothing,
// where without If-Match the second would silently replace the first. A
// quota not set has no version: If-Match on it is 409 and sets nothing.
// Without If-Match the PUT is the last writer wins, as it always was.
// Before quotas.set had a version check the PUTs with If-Match were all
// 400 INVALID_ARGUMENT ("If-Match is not supported").
func TestSetQuotaIfMatch(t *testing.T) {
	f := setupQuotaFleet(t)
	path := "/v1/tenants/acme/quotas/gpu"
	read, ok := f.quotaOf(t, "gpu")
	require.True(t, ok)
	v := strconv.FormatInt(read.Version, 10)

	var first quotaJSON
	f.ok(t, http.StatusOK, http.MethodPut, path, f.operator, `{"max":5}`, map[string]string{"If-Match": v}).decode(t, &first)
	require.Equal(t, int64(5), first.Max)
	require.Equal(t, read.Version+1, first.Version)

	e := f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPut, path, f.operator, `{"max":7}`, map[string]string{"If-Match": v})
	require.Contains(t, e.Message, "version "+strconv.FormatInt(first.Version, 10))
	// If-Match comes first: the max the quota has, at another version, is
	// still a conflict, not a no-op that reads as success.
	f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPut, path, f.operator, `{"max":5}`, map[string]string{"If-Match": `"` + v + `"`})
	now, _ := f.quotaOf(t, "gpu")
	require.Equal(t, first.Max, now.Max, "the stale write changed nothing")
	require.Equal(t, first.Version, now.Version)

	// The current version, quoted as an entity tag, applies; "*" is any.
	var second quotaJSON
	f.ok(t, http.StatusOK, http.MethodPut, path, f.operator, `{"max":7}`,
		map[string]string{"If-Match": `"` + strconv.FormatInt(first.Version, 10) + `"`}).decode(t, &second)
	require.Equal(t, int64(7), second.Max)
	f.ok(t, http.StatusOK, http.MethodPut, path, f.operator, `{"max":8}`, map[string]string{"If-Match": "*"})
	// Without If-Match, as before: the last writer wins.
	var last quotaJSON
	f.ok(t, http.StatusOK, http.MethodPut, path, f.operator, `{"max":9}`, nil).decode(t, &last)
	require.Equal(t, second.Version+2, last.Version)

	// If-Match with a max below the usage is still the usage's conflict
	// when the version matches.
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, f.reservationBody(t, 1), nil)
	e = f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPut, path, f.operator, `{"max":0}`,
		map[string]string{"If-Match": strconv.FormatInt(last.Version, 10)})
	require.Contains(t, e.Message, "uses 1")

	model := "/v1/tenants/acme/quotas/" + url.PathEscape("gpu:a100")
	e = f.fails(t, http.StatusConflict, core.CodeConflict, http.MethodPut, model, f.operator, `{"max":1}`, map[string]string{"If-Match": "1"})
	require.Contains(t, e.Message, "not set")
	_, ok = f.quotaOf(t, "gpu:a100")
	require.False(t, ok, "If-Match on a quota not set creates nothing")
	f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPut, path, f.operator, `{"max":1}`, map[string]string{"If-Match": "0"})
}

// A quota's version travels in the body, as every object's does: neither
// the PUT nor the list answers with an ETag (no route of the API sends
// one, and quotas keep to that; docs/openapi.yaml, "Versions and
// If-Match"), and the version the PUT answered is what If-Match takes, bare
// or as a strong entity tag. A weak tag cannot be a precondition on a
// write (RFC 9110 §13.1.1 compares strongly), so it is refused, not
// ignored.
func TestQuotaVersionIsInTheBodyNotAnETag(t *testing.T) {
	t.Parallel()
	f := setupQuotaFleet(t)
	path := "/v1/tenants/acme/quotas/vcpu"
	var put quotaJSON
	r := f.ok(t, http.StatusOK, http.MethodPut, path, f.operator, `{"max":70}`, nil)
	r.decode(t, &put)
	require.Empty(t, r.header.Values("ETag"), "PUT answered an ETag")
	r = f.ok(t, http.StatusOK, http.MethodGet, "/v1/tenants/acme/quotas", f.operator, nil, nil)
	require.Empty(t, r.header.Values("ETag"), "the list answered an ETag")
	listed, ok := f.quotaOf(t, "vcpu")
	require.True(t, ok)
	require.Equal(t, put.Version, listed.Version)
	r = f.ok(t, http.StatusOK, http.MethodPatch, "/v1/sites/fra1", f.operator, `{"name":"Frankfurt One"}`, nil)
	require.Empty(t, r.header.Values("ETag"), "a site's PATCH answered an ETag")

	v := strconv.FormatInt(put.Version, 10)
	e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, http.MethodPut, path, f.operator, `{"max":71}`,
		map[string]string{"If-Match": `W/"` + v + `"`})
	require.Contains(t, e.Message, "If-Match")
	var next quotaJSON
	f.ok(t, http.StatusOK, http.MethodPut, path, f.operator, `{"max":71}`, map[string]string{"If-Match": `"` + v + `"`}).decode(t, &next)
	require.Equal(t, put.Version+1, next.Version)
}
