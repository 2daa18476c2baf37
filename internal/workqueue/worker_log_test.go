package workqueue_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/testenv"
	"github.com/bettercompute/compute/internal/workqueue"
)

// A database outage is two lines of a worker's log, its first failed
// claim and its first claim that works again, however many polls fail in
// between: it logged every failed claim, once a poll, per worker pool.
func TestRunLogsAnOutageOnceNotEveryPoll(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	cfg, err := pgxpool.ParseConfig(d.URL)
	require.NoError(t, err)
	var down atomic.Bool
	var refused atomic.Int64
	cfg.PrepareConn = func(context.Context, *pgx.Conn) (bool, error) {
		if down.Load() {
			refused.Add(1)
			return true, errors.New("database unreachable")
		}
		return true, nil
	}
	pool, err := pgxpool.NewWithConfig(t.Context(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	var out testenv.LogBuffer
	w := workqueue.NewWorker(pool, "w", nil, slog.New(slog.NewJSONHandler(&out, nil)))
	w.Handle(kind, func(context.Context, workqueue.Item) error { return nil })
	down.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx, time.Millisecond, nil) }()
	require.Eventually(t, func() bool { return refused.Load() >= 20 }, 30*time.Second, time.Millisecond,
		"twenty claims fail")
	down.Store(false)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "work queue: recovered") },
		30*time.Second, time.Millisecond, "the first claim that works ends the streak")
	cancel()
	<-done

	var lines []string
	for _, l := range out.LevelsAndMessages(t) {
		if l != "INFO work-queue shards rebalanced" { // the first claim that works takes the shards
			lines = append(lines, l)
		}
	}
	require.Equal(t, []string{"ERROR work queue", "INFO work queue: recovered"}, lines)
}
