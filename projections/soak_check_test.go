package projections_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/invariants"
)

// check asserts, after a step: compute check's invariants, the usage
// windows and the billing endpoint against what was held, the webhook
// receiver, and the read models against the write model.
func (s *soak) check(t *testing.T, when string) {
	t.Helper()
	violations, err := invariants.Check(s.ctx, s.d.Q)
	require.NoError(t, err)
	require.Empty(t, violations, when)
	s.requireBilledIsHeldSince(t, when)
	s.requireHooksDelivered(t, when)
	s.requireEndedAreBilled(t, when)
	require.Empty(t, mismatchesOf(t, s.fixture, reservationMismatches), "%s: reservations against write model", when)
	for _, q := range readModelMismatches {
		require.Empty(t, mismatchesOf(t, s.fixture, q), "%s: read model against write model", when)
	}
}

// mismatchesOf runs one of the queries below and returns what it names.
func mismatchesOf(t *testing.T, f *fixture, query string, args ...any) []string {
	t.Helper()
	rows, err := f.d.Pool.Query(f.ctx, query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var got []string
	for rows.Next() {
		var m string
		require.NoError(t, rows.Scan(&m))
		got = append(got, m)
	}
	require.NoError(t, rows.Err())
	return got
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

// reservationMismatches names the reservations whose read model differs
// from the write model. Nothing is excused after a rebuild from a pruned
// log: it starts from the write model (projections.Seeder).
const reservationMismatches = `SELECT 'reservation ' || r.id || coalesce(': read model ' || m.state || ' v' || m.version, ' missing')
	 || ', write model ' || r.state || ' v' || r.version
   FROM reservations r LEFT JOIN rm_reservations m ON m.id = r.id
  WHERE m.id IS NULL
     OR m.state <> r.state OR m.version <> r.version OR m.end_ts <> upper(r.during)
     OR m.conditions::jsonb <> r.conditions::jsonb
  ORDER BY r.id`

// readModelMismatches are the comparisons of TestProjectionsMatchWriteModel
// for the fleet and the device holders, as queries that name what differs.
// Nothing is excused after a rebuild from a pruned log either.
var readModelMismatches = []string{
	// Nodes.
	`SELECT 'node ' || n.id || coalesce(': read model v' || m.version || ' cordoned ' || m.cordoned, ' missing')
		 || ', write model v' || n.version || ' cordoned ' || n.cordoned
	   FROM nodes n LEFT JOIN rm_fleet_nodes m ON m.id = n.id
	  WHERE m.id IS NULL
	     OR m.cordoned <> n.cordoned OR m.taints <> n.taints OR m.version <> n.version OR m.pool_id <> n.pool_id
	  ORDER BY n.id`,
	// Devices: GPUs and their atoms.
	`SELECT 'device ' || d.id || CASE WHEN m.id IS NULL THEN ' missing' ELSE ' differs' END
	   FROM devices d LEFT JOIN rm_fleet_devices m ON m.id = d.id
	  WHERE m.id IS NULL
	     OR m.parent_id IS DISTINCT FROM d.parent_id OR m.kind <> d.kind OR m.node_id <> d.node_id
	     OR m.mode IS DISTINCT FROM d.mode OR m.profile IS DISTINCT FROM d.profile OR m.retired <> d.retired
	     OR (d.kind = 'gpu' AND (m.health <> d.health OR m.quarantined <> d.quarantined OR m.version <> d.version))
	  ORDER BY d.id`,
	// What each placed reservation holds on its node (node utilization is
	// summed from it). The row of one that ended goes once its events
	// were pruned (commands.RetentionFleetAllocationsPrune).
	`SELECT 'allocation of ' || a.reservation_id || coalesce(': read model live ' || m.live, ' missing')
		 || ', write model live ' || (a.released_at IS NULL)
	   FROM allocations a LEFT JOIN rm_fleet_allocations m ON m.reservation_id = a.reservation_id
	  WHERE (m.reservation_id IS NULL
	         AND (a.released_at IS NULL
	              OR EXISTS (SELECT 1 FROM outbox o WHERE o.subject = 'reservations/' || a.reservation_id)))
	     OR m.live <> (a.released_at IS NULL) OR m.node_id <> a.node_id OR m.device_ids <> a.device_ids
	  ORDER BY a.reservation_id`,
	// Device holders are the bookings.
	`WITH booked AS (
	   SELECT b.device_id, a.reservation_id, tstzrange(min(lower(b.during)), max(upper(b.during)), '[)') AS during
	     FROM device_bookings b JOIN allocations a ON a.id = b.allocation_id
	    GROUP BY b.device_id, a.reservation_id),
	 held AS (SELECT device_id, reservation_id, during FROM rm_device_holders WHERE NOT isempty(during))
	 SELECT 'holder of ' || device_id || ' by ' || reservation_id || ': booked ' || coalesce(booked.during::text, 'never')
		 || ', held ' || coalesce(held.during::text, 'never')
	   FROM booked FULL JOIN held USING (device_id, reservation_id)
	  WHERE booked.during IS DISTINCT FROM held.during
	  ORDER BY 1`,
}
