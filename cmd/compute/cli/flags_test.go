package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// --start now is the moment itself: the server books a window that began
// from when it receives it, so a start rounded down to the second made
// --duration 1m a window of 59 s and a little. A start in the future is
// rounded to the second, start and end alike, so its length is exact.
func TestStartNowKeepsTheWholeDuration(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 10, 0, 0, 987_654_321, time.UTC)
	start, err := parseWhen("--start", "now", now)
	require.NoError(t, err)
	require.Equal(t, now, start)
	end, err := parseEnd("", "1m", start, now)
	require.NoError(t, err)
	require.Equal(t, now.Add(time.Minute), end)

	later, err := parseWhen("--start", "+10m", now)
	require.NoError(t, err)
	require.Equal(t, time.Date(2030, 1, 1, 10, 10, 0, 0, time.UTC), later)
}

// A window that ends after the year 9999 is refused by its flag: sent on,
// it failed in the request's encoding with a Go error about MarshalJSON.
func TestTimesAfterTheYear9999AreRefusedByTheirFlag(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	start, err := parseWhen("--start", "9999-12-31T23:00:00Z", now)
	require.NoError(t, err)
	_, err = parseEnd("", "2h", start, now)
	require.ErrorContains(t, err, "--duration: 10000-01-01T01:00:00Z is after the year 9999")
	_, err = parseWhen("--end", "9999-12-31T23:00:00-02:00", now)
	require.ErrorContains(t, err, "--end: 10000-01-01T01:00:00Z is after the year 9999")
	_, err = parseWhen("--start", "+100000h", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	require.ErrorContains(t, err, "--start:")
}
