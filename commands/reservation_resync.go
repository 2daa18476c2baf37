package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
)

// The reservation resync: the reservation reconcilers (place, activate,
// expire) are level-triggered and also resynced, as the specification
// asks of every reconciler, so that a lost work-queue row costs only time.
// KindReservationResync has the single key ReservationResyncKey and runs
// every ReservationResyncEvery (as node.resync does for each node's
// assignments).
const (
	KindReservationResync = "reservation.resync"
	ReservationResyncKey  = "reservations"
	// ReservationResyncEvery is how often the resync runs: "every few
	// minutes", the same period as node.resync's default.
	ReservationResyncEvery = 5 * time.Minute
	// reservationResyncBatch bounds the rows one transaction puts back;
	// a full batch runs again at once.
	reservationResyncBatch = 500
)

// ReservationResyncResult lists the reconciler rows a resync put back,
// each as "<kind> <key>" (the reservation id, or the scope of a queue).
type ReservationResyncResult struct {
	Requeued []string
	// More is set when the batch was full: more may be missing.
	More bool
}

// resyncReservations puts back the reconciler rows that live reservations
// need and have lost: the queue of a scope with pending reservations (now),
// a booked one's activation (at its start) and a pending or active one's
// expiry (at its end; a booking's activation arms it). Rows that exist are
// left alone. Its transaction is fenced by fence; workers run it as
// Reconcilers.ReservationResync.
func (h *Handlers) resyncReservations(ctx context.Context, fence func(pgx.Tx) error) (ReservationResyncResult, error) {
	var res ReservationResyncResult
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		res = ReservationResyncResult{}
		if err := fenced(tx, fence); err != nil {
			return err
		}
		q := db.New(tx)
		missing, err := q.ReservationResyncMissing(ctx, db.ReservationResyncMissingParams{
			QueueKind: KindReservationQueue, ActivateKind: KindReservationActivate, ExpireKind: KindReservationExpire,
			MaxRows: reservationResyncBatch,
		})
		if err != nil {
			return pg.Translate(err, "reservations")
		}
		for _, m := range missing {
			delay := time.Duration(m.DueInSeconds * float64(time.Second))
			if err := workqueue.Enqueue(ctx, q, m.Kind, m.Key, delay); err != nil {
				return err
			}
			res.Requeued = append(res.Requeued, m.Kind+" "+m.Key)
		}
		res.More = len(missing) == reservationResyncBatch
		return nil
	})
	if err != nil {
		return ReservationResyncResult{}, fmt.Errorf("resync reservations: %w", err)
	}
	return res, nil
}

// ReservationResync is the KindReservationResync work-queue handler:
// the resync, fenced by the item's shard lease, then again after
// ReservationResyncEvery (at once while batches come back full). A row put
// back is logged: it means something lost it.
func (r Reconcilers) ReservationResync(ctx context.Context, it workqueue.Item) error {
	res, err := r.h.resyncReservations(ctx, fenceOf(ctx, it))
	if err != nil {
		return err
	}
	if len(res.Requeued) > 0 {
		r.h.logger().Warn("reservation resync: reconciler rows were missing and are queued again",
			"count", len(res.Requeued), "first", res.Requeued[0])
	}
	if res.More {
		return workqueue.Again(0)
	}
	return workqueue.Again(ReservationResyncEvery)
}

// EnsureReservationResync enqueues the resync item if it is missing.
// Workers call it at start; enqueueing an existing item keeps its due time.
func (h *Handlers) EnsureReservationResync(ctx context.Context) error {
	return workqueue.Enqueue(ctx, db.New(h.Pool), KindReservationResync, ReservationResyncKey, 0)
}
