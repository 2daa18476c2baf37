package commands_test

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/clock"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
)

// TestGrowthPerSimulatedDay drives the handlers through many simulated
// days of steady use (reservations booked and released, API tokens
// issued and revoked, stream tickets issued and redeemed, join tokens
// issued) with the pruner running every simulated hour, as a worker runs
// it, and prints the row count of every table at the end of each day. It
// is a measurement: set COMPUTE_GROWTH_DAYS (45 or more) to run it. From
// 45 days on it also fails if a table other than those kept on purpose
// still grows once every retention has passed. What it found is in
// docs/concepts/retention.md.
func TestGrowthPerSimulatedDay(t *testing.T) {
	days, _ := strconv.Atoi(os.Getenv("COMPUTE_GROWTH_DAYS"))
	if days <= 0 {
		t.Skip("a measurement: set COMPUTE_GROWTH_DAYS to run it")
	}
	f := setup(t)
	f.node(t, "n1", exclusive, exclusive)
	p := &commands.Pruner{Pool: f.d.Pool, Retention: commands.DefaultRetention()}
	require.NoError(t, p.EnsureRetentionPrune(f.ctx))
	// The worker role as `compute serve` wires it (every reconciler and the
	// pruner) and the dispatcher role's projections.
	w := workqueue.NewWorker(f.d.Pool, "worker", clock.New(nil), nil)
	for kind, handle := range f.h.Reconcilers().ByKind() {
		w.Handle(kind, handle)
	}
	w.Handle(commands.KindRetentionPrune, p.HandleRetentionPrune)
	var sinks []outbox.TxSink
	for _, pr := range projections.All() {
		sinks = append(sinks, pr)
	}
	group := outbox.NewTxGroup(f.d.Pool, "dispatcher", sinks, nil)
	settle := func() {
		for range 50 {
			n, err := w.RunOnce(f.ctx)
			require.NoError(t, err)
			m, err := group.RunOnce(f.ctx)
			require.NoError(t, err)
			if n+m == 0 {
				return
			}
		}
	}
	tokens := f.h.Tokens()
	tickets := f.h.StreamTickets()
	var tables []string
	rows, err := f.d.Pool.Query(f.ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1`)
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		tables = append(tables, n)
	}
	require.NoError(t, rows.Err())
	counts := map[string][]int64{}
	const perDay = 8
	for day := 0; day < days; day++ {
		for i := 0; i < perDay; i++ {
			now := f.d.AdvanceSimClock(t, time.Hour)
			res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: now.Add(time.Minute),
				End: now.Add(2 * time.Hour), IdempotencyKey: fmt.Sprintf("k-%d-%d", day, i)})
			f.d.AdvanceSimClock(t, 30*time.Minute)
			_, err := f.h.ReleaseReservation(f.ctx, tenantA, commands.ReleaseReservation{ReservationID: res.Reservation.ID})
			require.NoError(t, err)
			created, err := tokens.CreateToken(f.ctx, operator, "acme", fmt.Sprintf("u%d-%d@acme", day, i), core.RoleViewer)
			require.NoError(t, err)
			actor := core.Actor{TokenID: created.ID, Tenant: "acme", Identity: created.Identity, Role: core.RoleViewer}
			for j := 0; j < 3; j++ {
				tk, err := tickets.Issue(f.ctx, actor)
				require.NoError(t, err)
				if j == 0 {
					_, err = tickets.Redeem(f.ctx, tk.Ticket)
					require.NoError(t, err)
				}
			}
			_, err = tokens.RevokeToken(f.ctx, operator, created.ID)
			require.NoError(t, err)
			_, err = f.h.CreateJoinToken(f.ctx, operator, fmt.Sprintf("new-%d-%d", day, i), time.Hour)
			require.NoError(t, err)
			settle()
		}
		f.d.AdvanceSimClock(t, 24*time.Hour-perDay*90*time.Minute)
		settle()
		for _, tb := range tables {
			var n int64
			require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM "+tb).Scan(&n))
			counts[tb] = append(counts[tb], n)
		}
	}
	sort.Strings(tables)
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s", "table \\ day")
	for d := 1; d <= days; d++ {
		if d == 1 || d%7 == 0 || d == days {
			fmt.Fprintf(&b, " %6d", d)
		}
	}
	b.WriteString("\n")
	for _, tb := range tables {
		c := counts[tb]
		if c[len(c)-1] == 0 {
			continue
		}
		fmt.Fprintf(&b, "%-28s", tb)
		for d := 1; d <= days; d++ {
			if d == 1 || d%7 == 0 || d == days {
				fmt.Fprintf(&b, " %6d", c[d-1])
			}
		}
		b.WriteString("\n")
	}
	t.Log("\n" + b.String())

	// Past every retention (30 days of events, 7 more of work), a table
	// gains rows in a week only if it is kept on purpose
	// (docs/concepts/retention.md, "Kept on purpose").
	if days < 45 {
		return
	}
	keptOnPurpose := map[string]bool{"reservations": true, "allocations": true, "device_bookings": true,
		"rm_reservations": true, "rm_device_holders": true, "rm_usage_allocations": true, "rm_usage_windows": true,
		"api_tokens": true}
	for _, tb := range tables {
		c := counts[tb]
		if !keptOnPurpose[tb] {
			require.LessOrEqual(t, c[days-1], c[days-8], "%s grew over the last week, past every retention", tb)
		}
	}
}
