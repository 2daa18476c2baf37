package httpapi_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/httpapi"
	"github.com/bettercompute/compute/queries"
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
	var holders struct{ At time.Time }
	s.mustCall(t, http.StatusOK, http.MethodGet, path+url.QueryEscape("2030-01-01t12:00:00.5z"), s.operator, nil, &holders)
	require.Equal(t, time.Date(2030, 1, 1, 12, 0, 0, 5e8, time.UTC), holders.At.UTC(), "RFC 3339 allows a lower-case t and z")
	for _, at := range []string{"2030-01-01T12:00:00+24:00", "2030-01-01T12:00:00-05:60", "2030-01-01T12:00:00,5Z"} {
		r := s.call(t, http.MethodGet, path+url.QueryEscape(at), s.operator, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", at, r.body)
		require.Equal(t, core.CodeInvalidArgument, r.errorBody(t).Code, at)
	}
}

// RFC 3339 (section 5.6, NOTE) lets the "T" and the "Z" be lower case:
// "2030-01-01t01:00:00z" is the time "2030-01-01T01:00:00Z" is, and was
// refused as "not an RFC 3339 time" (a query's ?at=:
// TestQueryTimeOutsideRFC3339IsRefused).
func TestLowerCaseTAndZAreRFC3339(t *testing.T) {
	t.Parallel()
	f := setupFleet(t)
	start := f.pg.Now(t).Add(time.Hour).Truncate(time.Second)
	lower := func(tm time.Time) string { return strings.ToLower(tm.Format(time.RFC3339Nano)) }
	var rsv reservationJSON
	f.ok(t, http.StatusCreated, http.MethodPost, "/v1/reservations", f.member, map[string]any{"poolId": "fra1-gpu", "gpus": 1,
		"start": lower(start), "end": strings.Replace(start.Add(time.Hour).Format(time.RFC3339), "T", "t", 1)}, nil).decode(t, &rsv)
	require.Equal(t, start.UTC(), rsv.Start.UTC())
	require.Equal(t, start.Add(time.Hour).UTC(), rsv.End.UTC())
	end := start.Add(2*time.Hour + 500*time.Millisecond)
	f.ok(t, http.StatusOK, http.MethodPost, "/v1/reservations/"+rsv.ID+"/extend", f.member,
		map[string]any{"end": strings.Replace(end.In(time.FixedZone("", 3600)).Format(time.RFC3339Nano), "T", "t", 1)}, nil).decode(t, &rsv)
	require.Equal(t, end.UTC(), rsv.End.UTC())
}

// A leap second (23:59:60) is refused by name: Go's parser called it not
// an RFC 3339 time, which it is, and PostgreSQL would have read it as the
// next minute. The API takes no leap second (none is scheduled, and a
// time with one is ambiguous on every system that smears it): a caller
// writes 23:59:59.999999 or the next minute.
func TestLeapSecondIsRefusedByName(t *testing.T) {
	t.Parallel()
	f := setupFleet(t, withReads)
	for _, tc := range []struct{ method, path, body, field string }{
		{http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"start":"2030-06-30T23:59:60Z","end":"2030-07-01T01:00:00Z"}`, `"start"`},
		{http.MethodPost, "/v1/reservations", `{"poolId":"fra1-gpu","gpus":1,"start":"2030-06-30T20:00:00Z","end":"2030-07-01t00:59:60.5+01:00"}`, `"end"`},
		{http.MethodGet, "/v1/devices/GPU-n1-0/holders?at=" + url.QueryEscape("2030-06-30T23:59:60Z"), "", `"at"`},
	} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		token := f.member
		if tc.method == http.MethodGet {
			token = f.operator
		}
		e := f.fails(t, http.StatusBadRequest, core.CodeInvalidArgument, tc.method, tc.path, token, body, nil)
		require.Contains(t, e.Message, "field "+tc.field+" is a leap second", tc.path)
	}
}

// withReads adds the read routes (the device holders' ?at=) to a fleet.
func withReads(r httpapi.Router) { httpapi.ReadRoutes(queries.New(r.Deps.Pool))(r) }
