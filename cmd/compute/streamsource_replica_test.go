package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/eventstream"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// A stream's catch-up from the read replica is never short of what the
// live feed has handed out: once a head was read from the primary (the
// replica out of rotation), a page is read from the replica only when the
// replica has replayed up to it, else from the primary, so a catch-up
// that ends on a short page leaves no gap before the live position.
func TestRotatingSourcePagesAreCompleteUpToTheLivePosition(t *testing.T) {
	t.Parallel()
	r := pgtest.NewReplicated(t)
	ctx := context.Background()
	appendEvents := func(n int) {
		require.NoError(t, pg.InTx(ctx, r.Pool, func(tx pgx.Tx) error {
			var b pg.Batch
			for range n {
				ev, err := core.NewEvent("site.updated", "", "sites/s1", map[string]any{"version": 1})
				if err != nil {
					return err
				}
				outbox.AppendIn(ctx, &b, ev, new(outbox.Position))
			}
			return b.Send(ctx, tx)
		}))
	}
	primary, replica := eventstream.OutboxSource(r.Pool), eventstream.OutboxSource(r.StandbyPool)
	appendEvents(5)
	want, err := primary.Head(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		h, err := replica.Head(ctx)
		return err == nil && h == want
	}, time.Minute, 10*time.Millisecond, "the standby replays the first events")
	_, err = r.StandbyPool.Exec(ctx, "SELECT pg_wal_replay_pause()")
	require.NoError(t, err)
	appendEvents(5)

	in := false
	src := &rotatingSource{primary: primary, replica: replica, inRotation: func() bool { return in }}
	head, err := src.Head(ctx) // out of rotation: the primary's, 10 events
	require.NoError(t, err)
	in = true // back in rotation, not yet caught up
	page, err := src.Page(ctx, eventstream.Scope{AllTenants: true}, outbox.Position{}, 100)
	require.NoError(t, err)
	require.Len(t, page.Events, 10, "the page reaches the head handed out: read from the primary")
	require.Equal(t, head, page.Events[9].Position)

	_, err = r.StandbyPool.Exec(ctx, "SELECT pg_wal_replay_resume()")
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		h, err := replica.Head(ctx)
		return err == nil && h == head
	}, time.Minute, 10*time.Millisecond)
	page, err = src.Page(ctx, eventstream.Scope{AllTenants: true}, outbox.Position{}, 100)
	require.NoError(t, err)
	require.Len(t, page.Events, 10, "caught up: the replica serves the same page")
}

// The live feed read from a standby that hangs (a frozen machine, a
// stalled disk) does not hang with it: every stream of the process reads
// that one feed, and a read that waited on the standby for ever would stop
// all of them, even after the check took the standby out of rotation. The
// primary answers instead, and it answers a stream's catch-up too.
func TestRotatingSourceDoesNotHangOnAFrozenStandby(t *testing.T) {
	t.Parallel()
	r := pgtest.NewReplicated(t)
	ctx := context.Background()
	replica := &queries.Replica{Pool: r.StandbyPool, Primary: r.Pool}
	_, err := replica.Check(ctx, time.Now())
	require.NoError(t, err)
	require.True(t, replica.InRotation())
	src := replicaStreamSource(r.Pool, replica)
	head, err := src.Head(ctx)
	require.NoError(t, err)
	require.NoError(t, pg.InTx(ctx, r.Pool, func(tx pgx.Tx) error {
		ev, err := core.NewEvent("site.updated", "", "sites/s1", map[string]any{"version": 1})
		if err != nil {
			return err
		}
		var b pg.Batch
		outbox.AppendIn(ctx, &b, ev, new(outbox.Position))
		return b.Send(ctx, tx)
	}))
	thaw, err := r.Standby.Freeze()
	require.NoError(t, err)
	t.Cleanup(thaw)

	read := make(chan error, 1)
	go func() {
		evs, err := src.ReadAfter(ctx, head, 100)
		if err == nil && len(evs) != 1 {
			err = fmt.Errorf("%d events, want the new one", len(evs))
		}
		read <- err
	}()
	select {
	case err := <-read:
		require.NoError(t, err, "the primary answers the live feed")
	case <-time.After(30 * time.Second):
		t.Fatal("the live feed waited on the frozen standby for 30 s")
	}
	paged := make(chan error, 1)
	go func() { // a stream's catch-up: one client's, but every client that resumes makes one
		p, err := src.Page(ctx, eventstream.Scope{AllTenants: true}, head, 100)
		if err == nil && len(p.Events) != 1 {
			err = fmt.Errorf("%d events, want the new one", len(p.Events))
		}
		paged <- err
	}()
	select {
	case err := <-paged:
		require.NoError(t, err, "the primary answers a catch-up page")
	case <-time.After(30 * time.Second):
		t.Fatal("a catch-up page waited on the frozen standby for 30 s")
	}
}
