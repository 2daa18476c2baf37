// Package lease implements named leases with fencing epochs, stored as rows
// in the leases table.
//
// A lease is held by an owner until expires_at; a takeover by another owner
// increments the epoch. Work done under a lease runs in a fenced transaction
// whose first statement locks the lease row FOR SHARE at the held epoch: a
// takeover then blocks until that transaction ends, so a zombie holder either
// still holds a valid lease for the whole transaction or aborts.
package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// Timings from the specification.
const (
	// TTL is how long shard, pool, site and singleton leases live.
	TTL = 15 * time.Second
	// RenewEvery is how often a holder renews them.
	RenewEvery = 5 * time.Second
	// GatewayTTL is how long a gateway's lease lives.
	GatewayTTL = 20 * time.Second
)

// ErrNotAcquired means another owner holds the lease and it has not expired.
var ErrNotAcquired = errors.New("lease held by another owner")

// ErrFenced means the lease was lost (expired or taken over): the fenced
// transaction must not commit.
var ErrFenced = core.Errorf(core.CodeConflict, "lease lost: another holder took over")

// Lease is a lease as held by one owner at one epoch.
type Lease struct {
	Name      string
	Owner     string
	Epoch     int64
	ExpiresAt time.Time
	// DBNow is compute_now() when the lease was taken or renewed; holders
	// anchor their Clock to it.
	DBNow time.Time
}

// Acquire takes name for owner, or renews it when owner already holds it.
// It returns ErrNotAcquired when someone else holds a live lease. Once
// sent, the write runs to its end even when ctx ends meanwhile (see
// settled).
func Acquire(ctx context.Context, q *db.Queries, name, owner string, ttl time.Duration) (Lease, error) {
	ctx, cancel, err := settled(ctx)
	defer cancel()
	if err != nil {
		return Lease{}, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	row, err := q.LeaseAcquire(ctx, db.LeaseAcquireParams{Name: name, Owner: owner, TtlSeconds: ttl.Seconds()})
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, ErrNotAcquired
	}
	if err != nil {
		return Lease{}, fmt.Errorf("acquire lease %s: %w", name, err)
	}
	return Lease{Name: name, Owner: owner, Epoch: row.Epoch, ExpiresAt: row.ExpiresAt, DBNow: row.DbNow}, nil
}

// Fence must be the first statement of a transaction that acts under the
// lease. It returns ErrFenced when the lease is no longer held at this epoch.
func (l Lease) Fence(ctx context.Context, tx pgx.Tx) error {
	_, err := db.New(tx).LeaseFence(ctx, db.LeaseFenceParams{Name: l.Name, Owner: l.Owner, Epoch: l.Epoch})
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrFenced
	}
	if err != nil {
		return fmt.Errorf("fence lease %s: %w", l.Name, err)
	}
	return nil
}

// FenceIn is Fence queued in b, the first statement after the BEGIN of a
// transaction sent as one batch (pg.InTxBatch): *held says, once b is
// sent, whether the lease was still held. The statements queued after it
// run whatever it found, so the caller must roll back (return ErrFenced)
// when *held is false; its row lock, taken before them, fences them
// exactly as Fence does when it holds.
func (l Lease) FenceIn(ctx context.Context, b *pg.Batch, held *bool) {
	var one int32
	pg.One(ctx, b, (*db.Queries).LeaseFence, db.LeaseFenceParams{Name: l.Name, Owner: l.Owner, Epoch: l.Epoch}, &one, held)
}

// Release gives the lease up so that another owner can take it at once.
func (l Lease) Release(ctx context.Context, q *db.Queries) error {
	_, err := q.LeaseRelease(ctx, db.LeaseReleaseParams{Name: l.Name, Owner: l.Owner, Epoch: l.Epoch})
	if err != nil {
		return fmt.Errorf("release lease %s: %w", l.Name, err)
	}
	return nil
}
