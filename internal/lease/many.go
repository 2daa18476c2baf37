package lease

import (
	"context"
	"fmt"
	"time"

	"github.com/bettercompute/compute/internal/db"
)

// AcquireMany takes every free lease among names for owner and renews those
// owner already holds, in one round trip. It returns the leases owner holds
// afterwards; names held live by others are simply absent. Like Acquire,
// once sent it runs to its end even when ctx ends meanwhile.
func AcquireMany(ctx context.Context, q *db.Queries, names []string, owner string, ttl time.Duration) ([]Lease, error) {
	ctx, cancel, err := settled(ctx)
	defer cancel()
	if err != nil {
		return nil, fmt.Errorf("acquire leases: %w", err)
	}
	rows, err := q.LeaseAcquireMany(ctx, db.LeaseAcquireManyParams{Owner: owner, TtlSeconds: ttl.Seconds(), Names: names})
	if err != nil {
		return nil, fmt.Errorf("acquire leases: %w", err)
	}
	out := make([]Lease, len(rows))
	for i, r := range rows {
		out[i] = Lease{Name: r.Name, Owner: owner, Epoch: r.Epoch, ExpiresAt: r.ExpiresAt, DBNow: r.DbNow}
	}
	return out, nil
}
