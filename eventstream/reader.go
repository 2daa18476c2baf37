package eventstream

import (
	"context"
	"fmt"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
)

// Page sizes of GET /v1/events: DefaultLimit when the client gives none,
// MaxLimit at most, so one request never loads an unbounded slice.
const (
	DefaultLimit = 100
	MaxLimit     = 500
)

// Page is one read of the log: events in log order, and the cursor to pass
// as `after` next time. Next is the last event's position, or, when the
// page is short (nothing more in scope is visible), how far the read
// covered the whole log, which may be past the scope's last event (see
// Reader.Page); never below the cursor that was read after.
type Page struct {
	Events []outbox.Stored
	Next   outbox.Position
}

// Reader pages the log for API clients. Every statement runs on its own
// (autocommit) against the pool: a reader never holds a snapshot or an xid
// between pages, so it never holds the outbox frontier back.
type Reader struct {
	q *db.Queries
}

// NewReader returns a reader over pool. pool must not be a transaction:
// the snapshot-xmin frontier is read by each statement.
func NewReader(pool db.DBTX) *Reader {
	return &Reader{q: db.New(pool)}
}

// Page returns up to limit events visible in scope strictly after `after`,
// in log order. limit 0 means DefaultLimit; above MaxLimit or negative is
// INVALID_ARGUMENT. A cursor whose following events were pruned is
// CURSOR_EXPIRED (see CheckCursor).
func (r *Reader) Page(ctx context.Context, scope Scope, after outbox.Position, limit int) (Page, error) {
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		return Page{}, core.Errorf(core.CodeInvalidArgument, "limit must be between 1 and %d, got %d", MaxLimit, limit)
	}
	// How far a short page covers the log, read before the page: every
	// event up to it is visible to the page's read too (its snapshot is
	// no older), so a short page has returned each of them in scope.
	covered, err := r.covered(ctx, scope)
	if err != nil {
		return Page{}, err
	}
	rows, err := r.read(ctx, scope, after, limit)
	if err != nil {
		return Page{}, fmt.Errorf("read events after %s: %w", after, err)
	}
	// Checked after the read, not before: pruning between a check and the
	// read would otherwise drop events silently. Retention deletes a
	// prefix, so if anything after `after` was gone during the read, the
	// oldest retained event is now above `after`.
	if err := r.CheckCursor(ctx, after); err != nil {
		return Page{}, err
	}
	page := Page{Events: make([]outbox.Stored, len(rows)), Next: after}
	for i, row := range rows {
		page.Events[i] = storedFromRow(row)
	}
	if n := len(page.Events); n > 0 {
		page.Next = page.Events[n-1].Position
	}
	if len(page.Events) < limit && page.Next.Less(covered) {
		page.Next = covered
	}
	return page, nil
}

// covered is the position a short page of scope may move its cursor to:
// the newest visible event of the whole log, zero when there is no need.
//
// Retention always keeps the newest event of the log, not of each scope.
// A client whose scope (a tenant, a types filter) stays quiet while others'
// events flow would otherwise keep the cursor of its own last event, and
// once that is pruned get CURSOR_EXPIRED although it missed nothing;
// moving a caught-up cursor up to the log's newest event keeps it valid
// for as long as the client polls. An unfiltered operator's short page
// ends at that event anyway.
func (r *Reader) covered(ctx context.Context, scope Scope) (outbox.Position, error) {
	if scope.AllTenants && len(scope.Types) == 0 && scope.Subject == "" {
		return outbox.Position{}, nil
	}
	return r.head(ctx)
}

func (r *Reader) read(ctx context.Context, scope Scope, after outbox.Position, limit int) ([]db.Outbox, error) {
	types := scope.Types
	if types == nil {
		types = []string{} // a NULL array would make cardinality() NULL
	}
	if scope.Subject != "" {
		// From (subject, position): one thing's history costs its own
		// events, not the log's that lie between them. Operators read
		// every tenant's (TenantID ""), a tenant its own.
		tenant := ""
		if !scope.AllTenants {
			if scope.Tenant == "" {
				return nil, nil // no tenant's scope sees nothing, not every tenant's
			}
			tenant = scope.Tenant
		}
		return r.q.OutboxReadAfterOfSubject(ctx, db.OutboxReadAfterOfSubjectParams{
			Subject: scope.Subject, AfterTxid: after.TxID, AfterSeq: after.Seq,
			TenantID: tenant, Types: types, MaxRows: int32(limit),
		})
	}
	if scope.AllTenants && len(types) > 0 {
		// Per type, from (type, position): an operator's filtered read
		// costs its page, not the length of the log it skips over.
		return r.q.OutboxReadAfterAllTenantsOfTypes(ctx, db.OutboxReadAfterAllTenantsOfTypesParams{
			AfterTxid: after.TxID, AfterSeq: after.Seq, Types: types, MaxRows: int32(limit),
		})
	}
	if scope.AllTenants {
		return r.q.OutboxReadAfterOfTypes(ctx, db.OutboxReadAfterOfTypesParams{
			AfterTxid: after.TxID, AfterSeq: after.Seq, Types: types, MaxRows: int32(limit),
		})
	}
	if len(types) > 0 {
		// Per type, from (tenant, type, position): a tenant's own flood of
		// events of other types costs its filtered reads nothing, so none
		// of them holds the connections and the database every tenant's
		// requests share for the length of its log.
		return r.q.OutboxReadAfterForTenantOfTypes(ctx, db.OutboxReadAfterForTenantOfTypesParams{
			TenantID: scope.Tenant, AfterTxid: after.TxID, AfterSeq: after.Seq, Types: types, MaxRows: int32(limit),
		})
	}
	return r.q.OutboxReadAfterForTenant(ctx, db.OutboxReadAfterForTenantParams{
		TenantID: scope.Tenant, AfterTxid: after.TxID, AfterSeq: after.Seq, Types: types, MaxRows: int32(limit),
	})
}

// CheckCursor returns CURSOR_EXPIRED when events after `after` may have been
// pruned, so the client must list again instead of resuming (as a
// Kubernetes watch gets 410 Gone).
//
// The rule: a non-zero cursor strictly below the oldest retained event, or
// any non-zero cursor when the log is empty, is expired. It is sound
// because cursors are only ever positions of events that were visible, and
// anything that commits later has a greater position; so a cursor below
// the oldest row means the cursor's own event was deleted, and retention
// deletes a prefix of the log (in position order), which takes whatever
// followed it as well. It is conservative: a client whose cursor is exactly
// the last pruned event is told to re-list although it missed nothing. The
// zero cursor (no cursor) means "from the oldest retained event" and never
// expires. The pruner (commands.Pruner, COMPUTE_EVENT_RETENTION) deletes
// only such prefixes, and always keeps the newest visible event, so a
// cursor that has caught up never expires; with a retention of 0 nothing
// is pruned and no real cursor expires.
//
// A cursor that is no event's position of this log is expired too: one at
// or above the next transaction id this database will assign, or one
// above the oldest retained event where no event sits (retention never
// deletes there). It comes from another installation, or was kept from
// before this database was restored to an earlier point: the log's new
// events reuse the transaction ids the lost ones had after the restore
// point (a point-in-time recovery), or are numbered above them (a dump
// restored into the same cluster), and a client resuming from it would
// skip them, or keep what it derived from events that no longer happened,
// without a word. A hot standby (the read replica) applies neither rule:
// it may not yet have seen the primary's newest events, which its
// clients' cursors can name.
func (r *Reader) CheckCursor(ctx context.Context, after outbox.Position) error {
	if after.IsZero() {
		return nil
	}
	rows, err := r.q.OutboxOldestPosition(ctx, db.OutboxOldestPositionParams{AtTxid: after.TxID, AtSeq: after.Seq})
	if err != nil {
		return fmt.Errorf("read oldest event position: %w", err)
	}
	if len(rows) == 0 || after.Less(outbox.Position{TxID: rows[0].Txid, Seq: rows[0].Seq}) {
		return core.Errorf(core.CodeCursorExpired,
			"cursor %s is older than the retained event history: list events again without a cursor", after)
	}
	if !rows[0].InRecovery && after.TxID >= rows[0].NextTxid {
		return core.Errorf(core.CodeCursorExpired,
			"cursor %s is ahead of this event log (another installation's, or from before a restore): list events again without a cursor", after)
	}
	if !rows[0].InRecovery && !rows[0].AtEvent {
		return core.Errorf(core.CodeCursorExpired,
			"cursor %s is no event of this log (another installation's, or from before a restore): list events again without a cursor", after)
	}
	return nil
}

// head returns the newest visible event's position, zero when none is.
func (r *Reader) head(ctx context.Context) (outbox.Position, error) {
	rows, err := r.q.OutboxHeadPosition(ctx)
	if err != nil {
		return outbox.Position{}, fmt.Errorf("read newest event position: %w", err)
	}
	if len(rows) == 0 {
		return outbox.Position{}, nil
	}
	return outbox.Position{TxID: rows[0].Txid, Seq: rows[0].Seq}, nil
}

// storedFromRow mirrors outbox's own conversion (unexported there).
func storedFromRow(r db.Outbox) outbox.Stored {
	var tenant string
	if r.TenantID != nil {
		tenant = *r.TenantID
	}
	return outbox.Stored{
		Event: core.Event{
			ID: r.ID, Type: r.Type, TenantID: tenant, Subject: r.Subject, Data: r.Data, Time: r.Time,
		},
		Position: outbox.Position{TxID: r.Txid, Seq: r.Seq},
	}
}
