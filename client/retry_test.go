package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/client"
)

// answer is one canned response of a scripted server.
type answer struct {
	status int
	header map[string]string
	body   string
}

// scripted serves the answers in turn (the last one again once they run
// out) and records the requests it received.
type scripted struct {
	mu       sync.Mutex
	answers  []answer
	requests []*http.Request
	bodies   []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.bodies = append(s.bodies, string(b))
	a := s.answers[min(len(s.requests), len(s.answers))-1]
	s.mu.Unlock()
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	_, _ = io.WriteString(w, a.body)
}

func (s *scripted) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// newScripted starts a scripted server and a client of it whose waits are
// recorded instead of slept.
func newScripted(t *testing.T, answers ...answer) (*scripted, *client.API, *[]time.Duration) {
	t.Helper()
	s := &scripted{answers: answers}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	var mu sync.Mutex
	waits := &[]time.Duration{}
	api, err := client.New(srv.URL, "bc_secret", client.Options{UserAgent: "compute-test",
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			defer mu.Unlock()
			*waits = append(*waits, d)
			return ctx.Err()
		}})
	require.NoError(t, err)
	return s, api, waits
}

const conflict = `{"error":{"code":"CONFLICT","message":"reservation rsv_1 is released"}}`

// An error answer comes back as an *APIError with the envelope's code and
// message, the status, Retry-After and the request id; the response is nil.
func TestErrorsAreTyped(t *testing.T) {
	t.Parallel()
	s, api, _ := newScripted(t, answer{409, map[string]string{"X-Request-Id": "req-1"}, conflict})
	resp, err := api.ReleaseReservationWithResponse(context.Background(), "rsv_1", nil)
	require.Nil(t, resp)
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, client.APIError{Status: 409, Code: client.ErrorCodeCONFLICT,
		Message: "reservation rsv_1 is released", RequestID: "req-1"}, *apiErr)
	require.True(t, client.IsCode(err, client.ErrorCodeCONFLICT))
	require.Equal(t, "CONFLICT: reservation rsv_1 is released", err.Error())
	require.Equal(t, 1, s.count(), "a conflict is final")
	require.Equal(t, "Bearer bc_secret", s.requests[0].Header.Get("Authorization"))
	require.Equal(t, "compute-test", s.requests[0].Header.Get("User-Agent"))

	// Not an envelope (a proxy's page): no code, the body as the message.
	_, api, _ = newScripted(t, answer{502, nil, "<html>bad gateway</html>"})
	_, err = api.WhoamiWithResponse(context.Background())
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, 502, apiErr.Status)
	require.Empty(t, apiErr.Code)
	require.Equal(t, "HTTP 502: <html>bad gateway</html>", apiErr.Error())
}

// 429 and 503 are retried after Retry-After when the call is safe to
// repeat: a GET, or a POST with an Idempotency-Key (with the same body).
// A POST without one is not repeated: its error says when to retry.
func TestRetriesHonourRetryAfter(t *testing.T) {
	t.Parallel()
	limited := answer{429, map[string]string{"Retry-After": "2"}, `{"error":{"code":"RATE_LIMITED","message":"slow down"}}`}
	busy := answer{503, map[string]string{"Retry-After": "1"}, `{"error":{"code":"UNAVAILABLE","message":"deadline"}}`}
	ok := answer{200, nil, `{"tenant":"acme","identity":"u","role":"member","tokenId":"tok_1"}`}

	s, api, waits := newScripted(t, limited, busy, ok)
	resp, err := api.WhoamiWithResponse(context.Background())
	require.NoError(t, err)
	require.Equal(t, "acme", resp.JSON200.Tenant)
	require.Equal(t, 3, s.count())
	require.Equal(t, []time.Duration{2 * time.Second, time.Second}, *waits)

	created := answer{201, nil, `{"id":"rsv_1","state":"booked"}`}
	s, api, waits = newScripted(t, limited, created)
	key := "create-1"
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	gpus := 2
	body := client.CreateReservationRequest{Start: start, End: start.Add(time.Hour), Gpus: &gpus}
	res, err := api.CreateReservationWithResponse(context.Background(), &client.CreateReservationParams{IdempotencyKey: &key}, body)
	require.NoError(t, err)
	require.Equal(t, "rsv_1", res.JSON201.ID)
	require.Equal(t, 2, s.count())
	require.Equal(t, s.bodies[0], s.bodies[1], "the retry sends the same body")
	require.Equal(t, key, s.requests[1].Header.Get("Idempotency-Key"))
	require.Contains(t, *waits, 2*time.Second)

	s, api, _ = newScripted(t, limited, created)
	_, err = api.CreateReservationWithResponse(context.Background(), nil, body)
	var apiErr *client.APIError
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, client.ErrorCodeRATELIMITED, apiErr.Code)
	require.Equal(t, 2*time.Second, apiErr.RetryAfter)
	require.Equal(t, 1, s.count(), "a POST without an Idempotency-Key is not repeated")

	// A wait longer than MaxRetryWait is not waited for.
	s, api, _ = newScripted(t, answer{429, map[string]string{"Retry-After": "3600"}, limited.body}, ok)
	_, err = api.WhoamiWithResponse(context.Background())
	require.ErrorAs(t, err, &apiErr)
	require.Equal(t, time.Hour, apiErr.RetryAfter)
	require.Equal(t, 1, s.count())

	// Attempts are bounded.
	s, api, _ = newScripted(t, busy)
	_, err = api.WhoamiWithResponse(context.Background())
	require.True(t, client.IsCode(err, client.ErrorCodeUNAVAILABLE), "%v", err)
	require.Equal(t, 4, s.count())
}

// When the RateLimit headers say the token's bucket is empty, the next
// request waits for one request's worth of refill instead of drawing a
// 429: a bucket of 100 that is full again in 2 s refills one in 20 ms.
func TestEmptyBucketPacesTheNextRequest(t *testing.T) {
	t.Parallel()
	empty := answer{200, map[string]string{"RateLimit-Limit": "100", "RateLimit-Remaining": "0", "RateLimit-Reset": "2"},
		`{"tenant":"acme","identity":"u","role":"member","tokenId":"tok_1"}`}
	_, api, waits := newScripted(t, empty)
	_, err := api.WhoamiWithResponse(context.Background())
	require.NoError(t, err)
	require.Equal(t, client.RateLimit{Limit: 100, Remaining: 0, Reset: 2 * time.Second, At: api.RateLimit().At}, api.RateLimit())
	require.Empty(t, *waits)
	_, err = api.WhoamiWithResponse(context.Background())
	require.NoError(t, err)
	require.Len(t, *waits, 1)
	require.InDelta(t, float64(20*time.Millisecond), float64((*waits)[0]), float64(20*time.Millisecond))
}

func TestNewChecksItsArguments(t *testing.T) {
	t.Parallel()
	for _, server := range []string{"localhost:8080", "ftp://x", "http://", ""} {
		_, err := client.New(server, "bc_x", client.Options{})
		require.ErrorContains(t, err, "server URL", server)
	}
	// A password in the URL would never be sent, only saved and printed.
	_, err := client.New("https://alice:hunter2@compute.example.com", "bc_x", client.Options{})
	require.ErrorContains(t, err, "user name or password")
	require.NotContains(t, err.Error(), "hunter2")
	_, err = client.New("http://localhost:8080", "", client.Options{})
	require.ErrorContains(t, err, "token")
	_, err = client.New("http://localhost:8080", "bc_x\n", client.Options{})
	require.ErrorContains(t, err, "token")
	require.False(t, errors.Is(err, context.Canceled))
}
