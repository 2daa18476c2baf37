package client_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/client"
)

// An answer larger than Options.MaxResponseBody fails with
// ErrResponseTooLarge instead of being read whole into memory; one at the
// limit is read.
func TestResponseBodyIsBounded(t *testing.T) {
	t.Parallel()
	const limit = 1 << 10
	at := `{"identity":"` + strings.Repeat("a", limit-len(`{"identity":""}`)) + `"}`
	require.Len(t, at, limit)
	var body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	api, err := client.New(srv.URL, "bc_test", client.Options{MaxResponseBody: limit})
	require.NoError(t, err)

	body = at
	res, err := api.WhoamiWithResponse(context.Background())
	require.NoError(t, err, "a body at the limit is read")
	require.NotNil(t, res.JSON200)

	body = at + " "
	_, err = api.WhoamiWithResponse(context.Background())
	require.ErrorIs(t, err, client.ErrResponseTooLarge)
}
