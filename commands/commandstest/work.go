package commandstest

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/workqueue"
)

// workOwner is the owner of the shard leases Work takes: a worker of its
// own, which no real worker in a test shares.
const workOwner = "commandstest"

// Work runs handler on the work item (kind, key) as a worker of the work
// queue would, at once: under the key's shard lease, which it takes first
// and gives back after, so the handler's fence is the one production runs
// and a worker the test starts later can take the shard. An Again from the
// handler comes back as its delay with a nil error; any other error as it
// is. Tests move time with the simulated clock and run a reconciler with
// Work when it is due, instead of waiting for a worker.
func Work(ctx context.Context, pool *pgxpool.Pool, handler workqueue.Handler, kind, key string) (again time.Duration, err error) {
	q := db.New(pool)
	l, err := lease.Acquire(ctx, q, workqueue.ShardLeaseName(workqueue.ShardOf(key)), workOwner, lease.TTL)
	if err != nil {
		return 0, fmt.Errorf("commandstest: shard lease of %s %s: %w", kind, key, err)
	}
	defer func() {
		if rerr := l.Release(context.WithoutCancel(ctx), q); rerr != nil && err == nil {
			err = rerr
		}
	}()
	err = handler(ctx, workqueue.Item{Kind: kind, Key: key, Gen: 1, Attempts: 1, Lease: l})
	if d, ok := workqueue.AgainAfter(err); ok {
		return d, nil
	}
	return 0, err
}

// Activate runs the reservation.activate reconciler on reservation id. An
// early run is an error (its Again), as a test that activates means it.
func Activate(ctx context.Context, h *commands.Handlers, id string) error {
	return mustBeDone(Work(ctx, h.Pool, h.Reconcilers().ReservationActivate, commands.KindReservationActivate, id))
}

// Expire runs the reservation.expire reconciler on reservation id. An early
// run is an error (its Again).
func Expire(ctx context.Context, h *commands.Handlers, id string) error {
	return mustBeDone(Work(ctx, h.Pool, h.Reconcilers().ReservationExpire, commands.KindReservationExpire, id))
}

// RunQueue runs the reservation.queue reconciler on the waiting line key
// names (commands.PendingQueueKey) and returns when it asks to run again
// (0: nobody waits).
func RunQueue(ctx context.Context, h *commands.Handlers, key string) (time.Duration, error) {
	return Work(ctx, h.Pool, h.Reconcilers().ReservationQueue, commands.KindReservationQueue, key)
}

// SweepLiveness runs the liveness controller's periodic sweep once.
func SweepLiveness(ctx context.Context, h *commands.Handlers) error {
	_, err := Work(ctx, h.Pool, h.Reconcilers().NodeLivenessSweep, commands.KindNodeLivenessSweep, commands.LivenessSweepKey)
	return err
}

// ReconcileLiveness runs node nodeID's liveness reconciler and returns when
// it asks to run again (0: not until something changes).
func ReconcileLiveness(ctx context.Context, h *commands.Handlers, nodeID string) (time.Duration, error) {
	return Work(ctx, h.Pool, h.Reconcilers().NodeLiveness, commands.KindNodeLiveness, nodeID)
}

// ExpireCredentials runs node nodeID's credential-grace reconciler and
// returns when it asks to run again (0: no grace left to end).
func ExpireCredentials(ctx context.Context, h *commands.Handlers, nodeID string) (time.Duration, error) {
	return Work(ctx, h.Pool, h.Reconcilers().NodeCredentialGrace, commands.KindNodeCredentialGrace, nodeID)
}

// mustBeDone turns Work's Again into an error: the reconciler had nothing
// due yet.
func mustBeDone(again time.Duration, err error) error {
	if err == nil && again > 0 {
		return fmt.Errorf("run again after %s", again)
	}
	return err
}
