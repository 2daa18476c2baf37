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
