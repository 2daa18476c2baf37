package webhook

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNextDelayFollowsScheduleAndRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := Config{Rand: func() float64 { return 0.5 }}.withDefaults()
	failure := func(status int, retryAfter string) attemptResult {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return attemptResult{status: status, header: h}
	}
	for name, tc := range map[string]struct {
		done int
		res  attemptResult
		want time.Duration
		more bool
	}{
		"after the first attempt":               {1, failure(500, ""), 5 * time.Second, true},
		"after the seventh":                     {7, failure(500, ""), 10 * time.Hour, true},
		"schedule exhausted":                    {8, failure(500, ""), 0, false},
		"timeout":                               {2, attemptResult{err: http.ErrHandlerTimeout}, 5 * time.Minute, true},
		"429 later than schedule":               {1, failure(429, "120"), 120 * time.Second, true},
		"429 earlier than schedule":             {3, failure(429, "120"), 30 * time.Minute, true},
		"502 with HTTP date":                    {1, failure(502, now.Add(time.Hour).Format(http.TimeFormat)), time.Hour, true},
		"504 honoured":                          {2, failure(504, "600"), 10 * time.Minute, true},
		"503 Retry-After ignored":               {1, failure(503, "600"), 5 * time.Second, true},
		"500 Retry-After ignored":               {1, failure(500, "600"), 5 * time.Second, true},
		"absurd Retry-After capped":             {1, failure(429, "99999999999"), maxRetryAfter, true},
		"malformed Retry-After falls back":      {1, failure(429, "soon"), 5 * time.Second, true},
		"past HTTP date falls back to schedule": {1, failure(429, now.Add(-time.Hour).Format(http.TimeFormat)), 5 * time.Second, true},
	} {
		t.Run(name, func(t *testing.T) {
			got, more := c.nextDelay(tc.done, tc.res, now)
			require.Equal(t, tc.more, more)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestJitterIsBounded(t *testing.T) {
	t.Parallel()
	for _, r := range []float64{0, 0.25, 0.999999} {
		c := Config{Rand: func() float64 { return r }}.withDefaults()
		got, _ := c.nextDelay(3, attemptResult{status: 500}, time.Time{})
		require.InDelta(t, float64(30*time.Minute), float64(got), float64(3*time.Minute), "r=%v", r)
	}
	lo, _ := Config{Rand: func() float64 { return 0 }}.withDefaults().nextDelay(3, attemptResult{status: 500}, time.Time{})
	require.Equal(t, 27*time.Minute, lo, "-10%")
}

func TestCleanSnippet(t *testing.T) {
	t.Parallel()
	require.Equal(t, "ab", cleanSnippet([]byte("a\x00b")))
	require.Equal(t, "a\uFFFDb", cleanSnippet([]byte("a\xffb")))
	long := make([]byte, 2000)
	for i := range long {
		long[i] = 0xff
	}
	require.LessOrEqual(t, len(cleanSnippet(long)), snippetLimit)
}
