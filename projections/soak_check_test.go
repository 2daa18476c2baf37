package projections_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/invariants"
)

// check asserts, after a step: compute check's invariants, the usage
// windows and the billing endpoint against what was held, the webhook
// receiver, and the read models against the write model (as compute
// check compares them).
func (s *soak) check(t *testing.T, when string) {
	t.Helper()
	violations, err := invariants.Check(s.ctx, s.d.Q)
	require.NoError(t, err)
	require.Empty(t, violations, when)
	s.requireBilledIsHeldSince(t, when)
	s.requireHooksDelivered(t, when)
	s.requireEndedAreBilled(t, when)
	requireReadModelsAgree(t, s.fixture, when)
}

// requireHistoryBounded checks, right after a prune and apart from
// compute check's own count (requireNothingOverdue), that the billing
// sink's records of accepted windows are kept at most the work retention:
// before migration 0045 nothing deleted them.
func (s *soak) requireHistoryBounded(t *testing.T, when string) {
	t.Helper()
	var billed int
	require.NoError(t, s.d.Pool.QueryRow(s.ctx, `SELECT count(*) FROM billing_deliveries
		WHERE delivered_at < compute_now() - make_interval(secs => $1)`, soakRetention.Work.Seconds()).Scan(&billed))
	require.Zero(t, billed, "%s: billing deliveries delivered longer ago than the work retention", when)
}

// requireNothingOverdue checks what `compute check` reports right after
// a prune: with every sink caught up, no table has rows past their
// retention left.
func (s *soak) requireNothingOverdue(t *testing.T, when string) {
	t.Helper()
	overdue, err := s.pruner.Overdue(s.ctx)
	require.NoError(t, err)
	for _, o := range overdue {
		require.Zero(t, o.Rows, "%s: %s has %d rows overdue (%s), held by %q", when, o.Table, o.Rows, o.Rule, o.HeldBy)
	}
}

// requireReadModelsAgree fails, naming what differs, unless every read
// model agrees with the write model by the comparison of `compute check`
// (projections.CheckAgainstWriteModel), with nothing behind: the callers
// have caught every projection up, or rebuilt it. Nothing is excused after
// a rebuild from a pruned log: it starts from the write model
// (projections.Seeder); a fleet allocation retention deleted is not
// missing.
func requireReadModelsAgree(t *testing.T, f *fixture, when string) {
	t.Helper()
	for table, c := range f.checkAgainstWriteModel(t) {
		require.Empty(t, c.Rows, "%s: %s against the write model", when, table)
		require.Zero(t, c.Diverging, "%s: %s against the write model", when, table)
		require.Zero(t, c.Behind, "%s: %s behind its projection", when, table)
	}
}
