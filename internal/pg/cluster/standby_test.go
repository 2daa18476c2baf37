package cluster

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A standby made by StartStandby is a hot standby of its primary: it
// answers reads, refuses writes, and replays what the primary commits
// after the base backup.
func TestStartStandby(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("", "pgcluster-standby-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(base) })
	primary := startCluster(t, base+"/primary")
	pc := connect(t, primary)
	_, err = pc.Exec(t.Context(), "CREATE TABLE survivor (msg text); INSERT INTO survivor VALUES ('before')")
	require.NoError(t, err)

	standby, err := primary.StartStandby(t.Context(), testOptions(t, base+"/standby"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, standby.Stop()) })
	require.NotEqual(t, primary.Port(), standby.Port())
	sc := connect(t, standby)
	var recovering bool
	require.NoError(t, sc.QueryRow(t.Context(), "SELECT pg_is_in_recovery()").Scan(&recovering))
	require.True(t, recovering, "the standby is in recovery")
	require.Equal(t, "before", greeting(t, sc), "the base backup's data")
	_, err = sc.Exec(t.Context(), "INSERT INTO survivor VALUES ('refused')")
	require.ErrorContains(t, err, "read-only")

	_, err = pc.Exec(t.Context(), "UPDATE survivor SET msg = 'after'")
	require.NoError(t, err)
	var lsn string
	require.NoError(t, pc.QueryRow(t.Context(), "SELECT pg_current_wal_insert_lsn()::text").Scan(&lsn))
	require.Eventually(t, func() bool {
		var replayed bool
		return sc.QueryRow(t.Context(), "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&replayed) == nil && replayed
	}, time.Minute, 10*time.Millisecond, "the standby replays the primary's WAL")
	require.Equal(t, "after", greeting(t, sc))

	_, err = primary.StartStandby(t.Context(), testOptions(t, base+"/standby"))
	require.ErrorContains(t, err, "already holds a cluster")
}
