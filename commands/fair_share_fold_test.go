package commands_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/internal/workqueue"
)

// fairShareTenants are the tenants the fold tests compare: the seeded ones
// and ops, which never holds anything.
var fairShareTenants = []string{"acme", "globex", "ops"}

// usageBoth is fair_share_usage (settled total, live part) and
// fair_share_usage_full (migration 0034's computation, every allocation of
// the last ten half-lives) of tenants at half-life h, now.
func (f *fixture) usageBoth(t *testing.T, h float64) (settled, full map[string]float64) {
	t.Helper()
	read := func(sql string) map[string]float64 {
		rows, err := f.d.Pool.Query(f.ctx, sql, fairShareTenants, h)
		require.NoError(t, err)
		defer rows.Close()
		out := map[string]float64{}
		for rows.Next() {
			var tenant string
			var v float64
			require.NoError(t, rows.Scan(&tenant, &v))
			out[tenant] = v
		}
		require.NoError(t, rows.Err())
		return out
	}
	return read("SELECT tenant_id, gpu_hours FROM fair_share_usage($1, $2)"),
		read("SELECT tenant_id, gpu_hours FROM fair_share_usage_full($1, $2, (SELECT compute_now()))")
}

// fold runs fair_share_fold at half-life h with the service's margin.
func (f *fixture) fold(t *testing.T, h float64) {
	t.Helper()
	_, err := f.d.Q.FairShareFold(f.ctx, db.FairShareFoldParams{HalfLifeSeconds: h, MarginSeconds: commands.FairShareFoldMargin.Seconds()})
	require.NoError(t, err)
}

// The settled total answers what the full computation answers, on a random
// history: reservations created, placed late, released, extended, expired
// (and released after their end, as a late expiry does), windows in the
// future, windows that cross the watermark, allocations that leave the ten
// half-lives window; three tenants, two half-lives folded at different
// times, read after every step. Before the fold, fair_share_usage read
// every allocation of the last ten half-lives (0.8 to 0.95 s with 300,000
// of them).
func TestFairShareSettledTotalEqualsFullComputation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive)
	rng := rand.New(rand.NewPCG(26, 3))
	halfLives := []float64{2 * 3600, 1800} // ten half-lives: 20 h and 5 h
	type live struct {
		id  string
		end time.Time
	}
	var held []live
	n := 0
	compared, settledUsed := 0, 0
	for step := range 160 {
		now := f.d.AdvanceSimClock(t, time.Duration(rng.IntN(100))*time.Minute)
		// Create one to three reservations, placed now.
		for range 1 + rng.IntN(3) {
			n++
			tenant := fairShareTenants[rng.IntN(2)]
			start := now.Add(time.Duration(rng.IntN(600)-420) * time.Minute) // from 7 h ago to 3 h ahead
			if rng.IntN(6) == 0 {
				start = now.Add(time.Duration(2+rng.IntN(30)) * 24 * time.Hour) // far future
			}
			end := start.Add(time.Duration(1+rng.IntN(480)) * time.Minute)
			id := fmt.Sprintf("rsv_fold_%d", n)
			state := "booked"
			if !start.After(now) {
				state = "active"
			}
			_, err := f.d.Pool.Exec(f.ctx, `
				INSERT INTO reservations (id, tenant_id, created_by, state, pool_id, spec, during, priority_class, priority, preemptible)
				VALUES ($1, $2, 'test', $3, 'fra1-gpu', '{}', tstzrange($4, $5, '[)'), 'standard', 0, false);
				`, id, tenant, state, start, end)
			require.NoError(t, err)
			_, err = f.d.Pool.Exec(f.ctx, `
				INSERT INTO allocations (id, reservation_id, node_id, device_ids, vcpu, memory, disk)
				VALUES ($1, $2, 'n1', $3, 0, 0, 0)`, "alc_fold_"+fmt.Sprint(n), id, make([]string, 1+rng.IntN(4)))
			require.NoError(t, err)
			held = append(held, live{id: id, end: end})
		}
		// End or extend some of the held ones.
		for i := 0; i < len(held); i++ {
			r := held[i]
			switch x := rng.IntN(10); {
			case x < 2 || (x < 6 && !r.end.After(now)): // released, or expired (maybe late)
				state := "released"
				if !r.end.After(now) {
					state = "expired"
				}
				_, err := f.d.Pool.Exec(f.ctx, `
					UPDATE reservations SET state = $2 WHERE id = $1;
					`, r.id, state)
				require.NoError(t, err)
				_, err = f.d.Pool.Exec(f.ctx, `UPDATE allocations SET released_at = compute_now() WHERE reservation_id = $1`, r.id)
				require.NoError(t, err)
				held = append(held[:i], held[i+1:]...)
				i--
			case x == 6: // extended (even past its end, before its expiry ran)
				r.end = r.end.Add(time.Duration(1+rng.IntN(240)) * time.Minute)
				_, err := f.d.Pool.Exec(f.ctx, `UPDATE reservations SET during = tstzrange(lower(during), $2, '[)') WHERE id = $1`,
					r.id, r.end)
				require.NoError(t, err)
				held[i] = r
			}
		}
		for i, h := range halfLives {
			if rng.IntN(3+2*i) == 0 {
				f.fold(t, h)
			}
			settled, full := f.usageBoth(t, h)
			require.Len(t, settled, len(fairShareTenants))
			for _, tenant := range fairShareTenants {
				want, got := full[tenant], settled[tenant]
				require.InDelta(t, want, got, 1e-9*math.Max(1, math.Abs(want)),
					"step %d, half-life %v s, tenant %s", step, h, tenant)
				if want == 0 {
					require.Zero(t, got, "step %d, half-life %v s, tenant %s: nothing held, exactly 0", step, h, tenant)
				}
				compared++
			}
			var used bool
			require.NoError(t, f.d.Pool.QueryRow(f.ctx, `SELECT EXISTS (SELECT 1 FROM fair_share_folds
				WHERE half_life_seconds = $1 AND settled_at > compute_now() - make_interval(secs => 10 * $1))`, h).Scan(&used))
			if used {
				settledUsed++
			}
		}
	}
	t.Logf("%d comparisons, %d of %d reads through a settled total", compared, settledUsed, 2*160)
	require.Greater(t, settledUsed, 160, "most reads go through a settled total")
}

// fair_share_usage reads what the tenant's live and recent allocations
// cost, not its history: with 20,000 released allocations of the last
// week, one every 30 s, it reads about 40 rows of allocations and
// reservations once a fold has settled them — the 20 released within the
// fold's margin and their reservations, read live, and the live ones —
// where the full computation (fair_share_usage before the fold existed)
// reads every one; with the plan a connection caches and with a generic
// one.
func TestFairShareUsageReadsRecentAllocations(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	const history = 20_000
	_, err := f.d.Pool.Exec(f.ctx, fmt.Sprintf(`
		INSERT INTO reservations (id, tenant_id, created_by, state, pool_id, spec, during, priority_class, priority, preemptible, created_at)
		SELECT 'rsv_hist' || g, 'acme', 'test', 'released', 'fra1-gpu', '{}',
		       tstzrange(compute_now() - make_interval(secs => 3600 + g * 30), compute_now() - make_interval(secs => 3600 + g * 30) + interval '2 hours', '[)'),
		       'standard', 0, false, compute_now() - make_interval(secs => 3600 + g * 30)
		  FROM generate_series(1, %d) g;
		INSERT INTO allocations (id, reservation_id, node_id, device_ids, vcpu, memory, disk, released_at, created_at)
		SELECT 'alc_hist' || g, 'rsv_hist' || g, 'n1', ARRAY['d'], 0, 0, 0,
		       compute_now() - make_interval(secs => 3600 + g * 30) + interval '1 hour', compute_now() - make_interval(secs => 3600 + g * 30)
		  FROM generate_series(1, %d) g;
		ANALYZE reservations; ANALYZE allocations`, history, history))
	require.NoError(t, err)
	const h = 7 * 24 * 3600.0
	f.fold(t, h)
	f.d.AdvanceSimClock(t, 20*time.Minute)
	now := f.d.Now(t)
	live := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: now, End: now.Add(2 * time.Hour)})
	_, err = f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: live.Reservation.ID})
	require.NoError(t, err)
	now = f.d.AdvanceSimClock(t, time.Minute)
	f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: now, End: now.Add(2 * time.Hour)})

	settled, full := f.usageBoth(t, h)
	require.InDelta(t, full["acme"], settled["acme"], 1e-9*full["acme"])
	require.Positive(t, settled["acme"])

	conn, err := f.d.Pool.Acquire(f.ctx)
	require.NoError(t, err)
	defer conn.Release()
	read := func(sql string, generic bool) int {
		t.Helper()
		name := fmt.Sprintf("fs_%d_%v", len(sql), generic)
		_, err := conn.Conn().Prepare(f.ctx, name, sql)
		require.NoError(t, err)
		mode := "auto"
		if generic {
			mode = "force_generic_plan"
		}
		_, err = conn.Exec(f.ctx, "SET plan_cache_mode = "+mode)
		require.NoError(t, err)
		plan, err := pgtest.ExplainExecute(f.ctx, conn, name, []any{[]string{"acme", "globex"}, h})
		require.NoError(t, err)
		return plan.RowsRead("allocations") + plan.RowsRead("reservations")
	}
	for _, generic := range []bool{false, true} {
		got := read("SELECT * FROM fair_share_usage($1, $2)", generic)
		t.Logf("fair_share_usage read %d rows (generic plan: %v)", got, generic)
		require.LessOrEqual(t, got, 60, "rows of allocations and reservations fair_share_usage read (generic plan: %v), %d in the history",
			generic, history)
		before := read("SELECT * FROM fair_share_usage_full($1, $2, compute_now())", generic)
		require.GreaterOrEqual(t, before, history, "the full computation reads the history")
	}
}

// The fold runs as a reconciler, fenced by its item's shard lease, and
// queues itself again.
func TestFairShareFoldReconciler(t *testing.T) {
	t.Parallel()
	f := setup(t)
	require.NoError(t, f.h.EnsureFairShareFold(f.ctx))
	w := workqueue.NewWorker(f.d.Pool, "w", nil, nil)
	w.Handle(commands.KindFairShareFold, f.h.Reconcilers().ByKind()[commands.KindFairShareFold])
	n, err := w.RunOnce(f.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	var settledAt time.Time
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT settled_at FROM fair_share_folds WHERE half_life_seconds = $1",
		(7*24*time.Hour).Seconds()).Scan(&settledAt))
	require.True(t, f.d.Now(t).Add(-commands.FairShareFoldMargin).Equal(settledAt), "watermark %v", settledAt)
	var rows int
	require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM tenant_fair_share_settled").Scan(&rows))
	require.Equal(t, len(fairShareTenants), rows, "a total for every tenant")
	r, err := f.d.Q.WorkQueueGet(context.Background(), dbWork(commands.KindFairShareFold, commands.FairShareFoldKey))
	require.NoError(t, err)
	require.True(t, f.d.Now(t).Add(commands.FairShareFoldEvery).Equal(r.NotBefore), "queued again at %v", r.NotBefore)
}
