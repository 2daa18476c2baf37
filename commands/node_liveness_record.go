package commands

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/lease"
	"github.com/bettercompute/compute/internal/pg"
)

// SeenAge is one session's liveness as a gateway reports it: how long ago
// the daemon was last heard from, by the gateway's monotonic clock.
type SeenAge struct {
	NodeID string
	Epoch  int64
	Age    time.Duration
}

// RecordNodeLiveness records a gateway's liveness ages in one statement,
// fenced by the gateway's lease. The database computes last_seen_at as
// compute_now() - age; sessions whose epoch moved on (or that another
// gateway now holds) are left untouched. It returns the nodes it touched:
// a gateway drops from its cache any session not among them.
func (s NodeSessions) RecordNodeLiveness(ctx context.Context, gw lease.Lease, gatewayID string, seen []SeenAge) ([]string, error) {
	h := s.h
	if len(seen) == 0 {
		return nil, nil
	}
	p := db.NodeSessionTouchParams{GatewayID: gatewayID}
	for _, x := range seen {
		p.NodeIds = append(p.NodeIds, x.NodeID)
		p.Epochs = append(p.Epochs, x.Epoch)
		p.Ages = append(p.Ages, x.Age.Seconds())
	}
	var touched []string
	err := pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
		if err := gw.Fence(ctx, tx); err != nil {
			return err
		}
		var err error
		touched, err = db.New(tx).NodeSessionTouch(ctx, p)
		return pg.Translate(err, "node sessions")
	})
	if err != nil {
		return nil, fmt.Errorf("flush liveness of gateway %s: %w", gatewayID, err)
	}
	return touched, nil
}
