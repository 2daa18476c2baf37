package commands_test

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/webhook"
)

// TestGrowthPerSimulatedDay drives the handlers through many simulated
// days of steady use and prints the row count of every table at the end
// of each day. Each day: reservations booked, assigned to their node's
// daemon and released; API tokens issued and revoked; stream tickets
// issued and redeemed; join tokens issued and left unused; an hour of
// priority work (preemptions, a cut back, a reservation that waits in the
// line until its window passes, instances started, stopped and exiting,
// an exec); each daemon's connection dropped and made again, once a
// week a node joined again with a join token, and once a week a node
// away for half a day (a job sent to it times out); webhook deliveries to an
// endpoint that answers and one that never does (disabled after five
// days, re-enabled and recovered weekly), and an endpoint created and
// deleted. Everything `compute serve` runs in the background runs too:
// the reconcilers, the pruner, the liveness sweep, the fair-share fold,
// the projections and the webhook scheduler and deliveries
// (growthFleet). It is a measurement: set COMPUTE_GROWTH_DAYS (45 or
// more) to run it. From 45 days on it also fails if a table other than
// those kept on purpose still grows once every retention has passed.
// What it found is in docs/concepts/retention.md.
func TestGrowthPerSimulatedDay(t *testing.T) {
	days, _ := strconv.Atoi(os.Getenv("COMPUTE_GROWTH_DAYS"))
	if days <= 0 {
		t.Skip("a measurement: set COMPUTE_GROWTH_DAYS to run it")
	}
	f := setup(t)
	p := &commands.Pruner{Pool: f.d.Pool, Logger: quietLog, Retention: commands.DefaultRetention()}
	g := setupGrowthFleet(t, f, p)
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
	// The rows of a table kept on purpose that are not: join tokens never
	// used are pruned, the used ones stay.
	subsets := map[string]string{
		"node_join_tokens unused": "SELECT count(*) FROM node_join_tokens WHERE used_at IS NULL",
	}
	counts := map[string][]int64{}
	// Every daemon carries out every job it is sent, so neither the node
	// resync (assign:<id>:g<generation>) nor a reconnect's reconcile
	// (assign:<id>:r<epoch>) finds an assign missing: an allocation is
	// assigned once, at booking or by its activation. The resync once
	// counted an allocation whose start had passed before its activation
	// ran, and about seven assigns a day were queued twice.
	var repushed []string
	const perDay = 8
	step := func(d time.Duration) time.Time {
		now := f.d.AdvanceSimClock(t, d)
		g.alive(t)
		return now
	}
	for day := 0; day < days; day++ {
		dayStart := f.d.Now(t)
		var churn string // an endpoint acme creates and deletes the same day
		for i := 0; i < perDay; i++ {
			now := step(time.Hour)
			res := f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, Start: now.Add(time.Minute),
				End: now.Add(2 * time.Hour), IdempotencyKey: fmt.Sprintf("k-%d-%d", day, i)})
			step(30 * time.Minute)
			g.settle(t) // active, its assign carried out
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
			g.settle(t)
			switch i {
			case 0:
				g.priorityHour(t, day)
			case 2:
				ep, err := g.hooks.CreateEndpoint(f.ctx, tenantA, webhook.CreateEndpoint{URL: "https://hooks.acme.example/trial"})
				require.NoError(t, err)
				churn = ep.ID
			case 4:
				for _, d := range g.daemons {
					g.reconnect(t, d)
				}
				if day%7 == 3 {
					g.rejoin(t, g.daemons[0])
				}
				g.settle(t)
			case 5:
				_, err := g.hooks.DeleteEndpoint(f.ctx, tenantA, churn)
				require.NoError(t, err)
			case 6:
				if day%7 == 6 {
					g.recoverGlobex(t)
				}
				if day%7 == 1 {
					g.leave(t, g.daemons[1], day) // until the day's end
				}
			}
		}
		step(dayStart.Add(24 * time.Hour).Sub(f.d.Now(t)))
		g.settle(t)
		if g.daemons[1].away {
			g.comeBack(t, g.daemons[1])
			g.settle(t)
		}
		rows, err := f.d.Pool.Query(f.ctx, `SELECT idempotency_key FROM node_commands
			WHERE kind = 'assign' AND created_at >= $1 AND idempotency_key ~ ':[gr][0-9]+$' ORDER BY seq`, dayStart)
		require.NoError(t, err)
		for rows.Next() {
			var key string
			require.NoError(t, rows.Scan(&key))
			repushed = append(repushed, fmt.Sprintf("day %d: %s", day+1, key))
		}
		require.NoError(t, rows.Err())
		for _, tb := range tables {
			var n int64
			require.NoError(t, f.d.Pool.QueryRow(f.ctx, "SELECT count(*) FROM "+tb).Scan(&n))
			counts[tb] = append(counts[tb], n)
		}
		for name, query := range subsets {
			var n int64
			require.NoError(t, f.d.Pool.QueryRow(f.ctx, query).Scan(&n))
			counts[name] = append(counts[name], n)
		}
	}
	for name := range subsets {
		tables = append(tables, name)
	}
	sort.Strings(tables)
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s", "table \\ day")
	for d := 1; d <= days; d++ {
		if d == 1 || d%7 == 0 || d == days {
			fmt.Fprintf(&b, " %6d", d)
		}
	}
	b.WriteString("   /day, last week\n")
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
		if days > 7 {
			fmt.Fprintf(&b, " %8.1f", float64(c[days-1]-c[days-8])/7)
		}
		b.WriteString("\n")
	}
	t.Log("\n" + b.String())
	require.Empty(t, repushed, "assigns queued again by the resync or a reconcile")

	// Past every retention (30 days of events, 7 more of work), a table
	// grows only if it is kept on purpose (docs/concepts/retention.md,
	// "Kept on purpose"). Growing is gaining at least a row a day and a
	// tenth of its rows in two weeks: its fewest rows in the last week are
	// that many more than its most in the week two weeks before. Counts
	// that swing with the hour, the week and the order work is run in
	// (the failing endpoint's retries move work_queue by tens of rows, and
	// webhook_attempts by up to 40 around 540 over 120 days) do not pass
	// that.
	if days < 45 {
		return
	}
	keptOnPurpose := map[string]bool{"reservations": true, "allocations": true, "device_bookings": true,
		"rm_reservations": true, "rm_device_holders": true, "rm_usage_allocations": true, "rm_usage_windows": true,
		"api_tokens": true, "reservation_preemptions": true,
		// One of each per join: the credential and the join token used.
		"node_credentials": true, "node_join_tokens": true}
	var grew []string
	for _, tb := range tables {
		c := counts[tb]
		if low, high := slices.Min(c[days-7:]), slices.Max(c[days-21:days-14]); !keptOnPurpose[tb] && low >= high+max(7, high/10) {
			grew = append(grew, fmt.Sprintf("%s (at most %d in days %d-%d, at least %d in days %d-%d)",
				tb, high, days-20, days-14, low, days-6, days))
		}
	}
	require.Empty(t, grew, "grew past every retention")
}
