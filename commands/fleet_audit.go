package commands

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/invariants"
	"github.com/bettercompute/compute/internal/pg"
)

// Audit reads the write tables for `compute check`, which proves the
// state rather than trusting it: the capacity invariants and the nodes
// whose assignments have drifted. It changes nothing; it lives here
// because the tables it reads are the commands' own.
type Audit struct {
	Pool *pgxpool.Pool
}

// NodeDrift is a node whose observed generation has lagged its generation
// while one of its assign or unassign jobs stayed open.
type NodeDrift struct {
	NodeID             string
	Generation         int64
	ObservedGeneration int64
	// OpenJobs counts its open assignment jobs; OldestOpen is when the
	// oldest of them was opened.
	OpenJobs   int64
	OldestOpen time.Time
	// Connected reports whether the node has a session now.
	Connected bool
}

// NodeDrift lists the nodes whose observed generation has lagged their
// generation for longer than after (a lag without an open job is caught up
// at the daemon's next report or the node's next resync).
func (a *Audit) NodeDrift(ctx context.Context, after time.Duration) ([]NodeDrift, error) {
	rows, err := db.New(a.Pool).NodeAssignmentDrift(ctx, after.Seconds())
	if err != nil {
		return nil, pg.Translate(err, "node drift")
	}
	out := make([]NodeDrift, len(rows))
	for i, r := range rows {
		out[i] = NodeDrift{NodeID: r.NodeID, Generation: r.Generation, ObservedGeneration: r.ObservedGeneration,
			OpenJobs: r.OpenJobs, OldestOpen: r.OldestOpen, Connected: r.Connected}
	}
	return out, nil
}

// Invariants runs the capacity invariants (internal/invariants) and
// returns their violations; none is a pass.
func (a *Audit) Invariants(ctx context.Context) ([]invariants.Violation, error) {
	v, err := invariants.Check(ctx, db.New(a.Pool))
	if err != nil {
		return nil, pg.Translate(err, "invariants")
	}
	return v, nil
}
