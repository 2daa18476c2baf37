package clock

import (
	"bytes"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClockFollowsDatabaseAndReportsSkew(t *testing.T) {
	var logs bytes.Buffer
	c := New(slog.New(slog.NewTextHandler(&logs, nil)))
	local := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.local = func() time.Time { return local }

	db := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	require.Equal(t, time.Duration(0), c.Anchor(db), "the first anchor has nothing to drift from")
	require.Equal(t, db, c.Now())

	local = local.Add(10 * time.Second)
	require.Equal(t, db.Add(10*time.Second), c.Now(), "between anchors the clock moves with the process")

	// The database moved only 9.5 s: the process ran 0.5 s ahead, under MaxSkew.
	require.Equal(t, 500*time.Millisecond, c.Anchor(db.Add(9500*time.Millisecond)))
	require.NotContains(t, logs.String(), "ClockSkew")

	// The database jumped an hour (a simulated clock advanced, or a real skew).
	require.Equal(t, -time.Hour, c.Anchor(db.Add(9500*time.Millisecond+time.Hour)))
	require.Contains(t, logs.String(), "ClockSkew")
	require.Equal(t, -time.Hour, c.Skew())
	require.Equal(t, db.Add(9500*time.Millisecond+time.Hour), c.Now())
}
