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

// A time flag is read as the API reads a time: the CLI sends it
// re-encoded, so --start 2030-01-01T10:00:00+05:60, which Go's parser took
// as +06:00, was booked at 04:00Z where the API refuses that offset;
// +24:00 failed in the request's encoding with a Go error about
// MarshalJSON (exit 1); a lower-case t and z, RFC 3339, were "not a time".
func TestTimeFlagsAreReadAsTheAPIReadsThem(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.UTC)
	for _, v := range []string{"2030-01-01T10:00:00+05:60", "2030-01-01T10:00:00+24:00", "2030-01-01T10:00:00,5Z"} {
		_, err := parseWhen("--start", v, now)
		require.ErrorContains(t, err, `--start: "`+v+`" is not a time`)
		require.Equal(t, exitUsage, exitCode(err), v)
		_, err = parseSince(v, now)
		require.ErrorContains(t, err, `--since: "`+v+`" is not a time`)
	}
	at, err := parseWhen("--end", "2030-01-01t11:00:00z", now)
	require.NoError(t, err)
	require.True(t, now.Add(time.Hour).Equal(at), at)
	at, err = parseSince("2030-01-01t09:00:00z", now)
	require.NoError(t, err)
	require.True(t, now.Add(-time.Hour).Equal(at), at)
	_, err = parseWhen("--start", "2030-06-30T23:59:60Z", now)
	require.ErrorContains(t, err, "--start: \"2030-06-30T23:59:60Z\" is a leap second")
}
