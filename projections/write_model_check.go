package projections

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
)

// Kinds of a read-model row that disagrees with the write model.
const (
	// DivergenceMissing: the write model has the row, the read model not.
	DivergenceMissing = "missing"
	// DivergenceExtra: the read model has a row the write model lacks.
	DivergenceExtra = "extra"
	// DivergenceDiffers: both have it, with a mirrored field (the version
	// included) that differs.
	DivergenceDiffers = "differs"
)

// DivergentRow is one read-model row that disagrees with the write model.
type DivergentRow struct {
	// Key names the row: its id, or for rm_device_holders
	// "<device> held by <reservation>".
	Key string
	// Kind is DivergenceMissing, DivergenceExtra or DivergenceDiffers.
	Kind string
}

// ReadModelCheck is what CheckAgainstWriteModel found for one read-model
// table.
type ReadModelCheck struct {
	// Table is the rm_* table; Projection the projection that writes it,
	// which is also the NAME of `compute projections rebuild NAME`.
	Table      string
	Projection string
	// Diverging counts the rows that disagree although the projection has
	// applied every event of their subject: a bug or a lost write, which
	// only a rebuild repairs. Rows holds the first of them, in key order.
	Diverging int64
	Rows      []DivergentRow
	// Behind counts the rows that disagree while an event of their subject
	// lies after the projection's cursor: lag, not divergence.
	Behind int64
}

// Repair is the command that makes the read model agree again.
func (c ReadModelCheck) Repair() string {
	return "compute projections rebuild " + c.Projection
}

// CheckAgainstWriteModel compares each read model that mirrors write tables
// with them, in one read-only REPEATABLE READ transaction, so that the
// write tables, the read models and the projections' cursors are one
// snapshot: a projection saves its cursor in the transaction that writes
// its rows, and a command writes its event in the transaction that changes
// its rows. A row counts as diverging only when no event of its subject
// lies after its projection's cursor; otherwise the projection has yet to
// apply it and the row is only behind. Each table is one set-based query
// (sql/queries/rm_check.sql): one pass over it and its write tables, plus
// a scan of the log from the cursor on, which the check reads first and
// passes to the query so that PostgreSQL plans that scan knowing where it
// starts: caught up, it looks at the cursor's end of the log only. sample
// caps the rows returned per table; the counts are exact.
//
// Compared: rm_reservations (tenant, state, version, end, conditions,
// priority class, priority, preemptible), rm_fleet_nodes (pool, cordon,
// taints, state, no-schedule reasons, conditions, allocatable vCPU, memory
// and disk and the shrinks of them pending, version: what the rebuild's
// seed takes from the write model),
// rm_fleet_devices (parent, kind, node, mode, profile,
// retired; for a GPU its health, quarantine and version),
// rm_fleet_allocations (what each placed reservation holds: node, pool,
// atoms, scalars, live, version; a row retention deleted is not missing)
// and rm_device_holders (each atom's holding against its bookings). The
// pools' capacity is a sum over these, and the usage windows billing's,
// held by the capacity invariants and usage-held.
func CheckAgainstWriteModel(ctx context.Context, conn interface {
	BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
}, sample int32) ([]ReadModelCheck, error) {
	var out []ReadModelCheck
	err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
		func(tx pgx.Tx) error {
			// As a rebuild seeds: on a large fleet the planner's estimate
			// crosses jit_above_cost, and compiling would cost more than
			// running these one-pass queries.
			if _, err := tx.Exec(ctx, "SET LOCAL jit = off"); err != nil {
				return fmt.Errorf("check against the write model: %w", err)
			}
			checks := writeModelChecks()
			// Lock the read models before the first query takes the
			// snapshot: a rebuild swaps fresh tables in (rm_rebuild_swap),
			// and a table swapped in after the snapshot would look empty
			// in it, every row missing.
			tables := make([]string, 0, len(checks))
			for _, c := range checks {
				tables = append(tables, pgx.Identifier{c.table}.Sanitize())
			}
			if _, err := tx.Exec(ctx, "LOCK TABLE "+strings.Join(tables, ", ")+" IN ACCESS SHARE MODE"); err != nil {
				return fmt.Errorf("lock the read models: %w", err)
			}
			// Each query is planned again with its projection's cursor
			// (a custom plan), never with a generic plan a pooled
			// connection may have cached after five runs: that one
			// does not know where the log scan starts, assumes a third
			// of the log lies after it, and may read a whole index of it
			// to find the caught-up projections' nothing
			// (docs/benchmarks.md).
			if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_custom_plan"); err != nil {
				return fmt.Errorf("check against the write model: %w", err)
			}
			q := db.New(tx)
			// The cursors first, in the snapshot the comparisons read
			// (this is the transaction's first statement to take one),
			// so the planner knows where each log scan starts.
			cursors, err := readModelCursors(ctx, q, checks)
			if err != nil {
				return err
			}
			for _, c := range checks {
				rows, err := c.run(ctx, q, checkArgs{SampleSize: sample, AfterTxid: cursors[c.projection].Txid,
					AfterSeq: cursors[c.projection].Seq})
				if err != nil {
					return fmt.Errorf("check %s against the write model: %w", c.table, err)
				}
				r := ReadModelCheck{Table: c.table, Projection: c.projection}
				for _, row := range rows {
					r.Diverging, r.Behind = row.Diverging, row.BehindRows
					if !row.Behind {
						r.Rows = append(r.Rows, DivergentRow{Key: row.Key, Kind: row.Kind})
					}
				}
				out = append(out, r)
			}
			return nil
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readModelCursors reads the cursor of each projection checks name
// (RmCheckCursors), by projection.
func readModelCursors(ctx context.Context, q *db.Queries, checks []writeModelCheck) (map[string]db.RmCheckCursorsRow, error) {
	var names []string
	for _, c := range checks {
		if !slices.Contains(names, c.projection) {
			names = append(names, c.projection)
		}
	}
	rows, err := q.RmCheckCursors(ctx, names)
	if err != nil {
		return nil, fmt.Errorf("read the projections' cursors: %w", err)
	}
	out := make(map[string]db.RmCheckCursorsRow, len(rows))
	for _, r := range rows {
		out[r.Projection] = r
	}
	return out, nil
}

// checkArgs are a check query's arguments: the rows it returns at most,
// and its projection's cursor, after which the log's events are the ones
// the projection has yet to apply. sqlc types them per query although
// they are the same.
type checkArgs = struct {
	SampleSize int32
	AfterTxid  uint64
	AfterSeq   int64
}

// checkQuery runs one read model's comparison (sql/queries/rm_check.sql).
type checkQuery func(context.Context, *db.Queries, checkArgs) ([]db.RmCheckReservationsRow, error)

// writeModelCheck is one read model CheckAgainstWriteModel compares: its
// table, the projection that writes it (whose cursor tells behind from
// diverging) and its query.
type writeModelCheck struct {
	table, projection string
	run               checkQuery
}

// writeModelChecks lists the read models CheckAgainstWriteModel compares,
// in the order it reports them.
func writeModelChecks() []writeModelCheck {
	return []writeModelCheck{
		{"rm_reservations", NameReservations, convertRows((*db.Queries).RmCheckReservations)},
		{"rm_fleet_nodes", NameFleet, convertRows((*db.Queries).RmCheckFleetNodes)},
		{"rm_fleet_devices", NameFleet, convertRows((*db.Queries).RmCheckFleetDevices)},
		{"rm_fleet_allocations", NameFleet, convertRows((*db.Queries).RmCheckFleetAllocations)},
		{"rm_device_holders", NameDeviceHolders, convertRows((*db.Queries).RmCheckDeviceHolders)},
	}
}

// convertRows turns a check query's method into a checkQuery: its
// arguments from checkArgs, and its rows, which sqlc types per query
// although their columns are the same, into the reservations query's.
func convertRows[P ~checkArgs, R ~struct {
	Key        string
	Kind       string
	Behind     bool
	Diverging  int64
	BehindRows int64
}](f func(*db.Queries, context.Context, P) ([]R, error)) checkQuery {
	return func(ctx context.Context, q *db.Queries, args checkArgs) ([]db.RmCheckReservationsRow, error) {
		rows, err := f(q, ctx, P(args))
		out := make([]db.RmCheckReservationsRow, len(rows))
		for i, r := range rows {
			out[i] = db.RmCheckReservationsRow(r)
		}
		return out, err
	}
}
