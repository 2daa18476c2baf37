package queries_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg/pgtest"
	"github.com/bettercompute/compute/queries"
)

// A tenant's page of usage windows (GET /v1/billing/usage) reads that
// page, whatever another tenant holds and whatever was listed before on
// the same connection. Windows are hourly, so a tenant with long
// reservations holds thousands; the list statement filtered the tenant
// and the reservation with "$1 IS NULL OR tenant_id = $1", which a
// connection's cached generic plan (it knows no tenant) cannot look up by
// index: it walks every tenant's windows in (window_start, key) order and
// filters. Here "big" holds 20,000 windows and "small" 10; each statement
// a list sent is run again under EXPLAIN ANALYZE EXECUTE on its connection,
// with the plan the connection cached and with a forced generic plan, and
// the rows of rm_usage_windows it read are counted.
func TestTenantUsagePagesReadThePage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := pgtest.New(t)
	const history = 20_000
	_, err := d.Pool.Exec(ctx, `
		INSERT INTO tenants (id) VALUES ('big'), ('small') ON CONFLICT DO NOTHING;
		INSERT INTO rm_usage_windows (key, allocation_id, reservation_id, tenant_id, pool_id, node_id,
		       window_start, window_end, reserved_ms, devices, device_ms, vcpu, memory_mb, disk_gb, final)
		SELECT 'big/' || g, 'alc_big' || (g / 1000), 'rsv_big' || (g / 1000), 'big', 'fra1-gpu', 'n1',
		       timestamptz '2026-01-01' + g * interval '1 hour', timestamptz '2026-01-01' + (g + 1) * interval '1 hour',
		       3600000, 1, 3600000, 0, 0, 0, true
		  FROM generate_series(1, `+fmt.Sprint(history)+`) g;
		INSERT INTO rm_usage_windows (key, allocation_id, reservation_id, tenant_id, pool_id, node_id,
		       window_start, window_end, reserved_ms, devices, device_ms, vcpu, memory_mb, disk_gb, final)
		SELECT 'small/' || g, 'alc_small', 'rsv_small', 'small', 'fra1-gpu', 'n1',
		       timestamptz '2026-06-01' + g * interval '1 hour', timestamptz '2026-06-01' + (g + 1) * interval '1 hour',
		       3600000, 1, 3600000, 0, 0, 0, true
		  FROM generate_series(1, 10) g;
		ANALYZE rm_usage_windows`)
	require.NoError(t, err)

	pool, capture := planCachingPool(t, d.URL, "RmUsageWindowList")
	q := queries.New(pool)
	big := core.Actor{Tenant: "big", Identity: "b", Role: core.RoleMember}
	small := core.Actor{Tenant: "small", Identity: "s", Role: core.RoleMember}

	// Big pages through its windows, again and again, on the pool's one
	// connection, then through one reservation's.
	for range 8 {
		items, next, err := q.ListUsageWindows(ctx, big, queries.ListUsageWindows{Limit: 5})
		require.NoError(t, err)
		require.Len(t, items, 5)
		require.NotEmpty(t, next)
	}
	bigSQL, bigArgs := capture.Last()
	for range 8 {
		items, _, err := q.ListUsageWindows(ctx, big, queries.ListUsageWindows{ReservationID: "rsv_big7", Limit: 5})
		require.NoError(t, err)
		require.Len(t, items, 5)
		require.Equal(t, "rsv_big7", items[0].ReservationID)
	}
	bigRsvSQL, bigRsvArgs := capture.Last()
	items, next, err := q.ListUsageWindows(ctx, small, queries.ListUsageWindows{Limit: 20})
	require.NoError(t, err)
	require.Len(t, items, 10)
	require.Empty(t, next)
	smallSQL, smallArgs := capture.Last()
	// Another tenant's reservation is no window of small's.
	items, _, err = q.ListUsageWindows(ctx, small, queries.ListUsageWindows{ReservationID: "rsv_big7", Limit: 20})
	require.NoError(t, err)
	require.Empty(t, items)

	for _, c := range []struct {
		who  string
		sql  string
		args []any
		max  int
	}{
		{"small's page", smallSQL, smallArgs, 21},
		{"big's page", bigSQL, bigArgs, 6},
		{"big's page of one reservation", bigRsvSQL, bigRsvArgs, 6},
	} {
		for _, generic := range []bool{false, true} {
			read := rmRowsRead(t, pool, "rm_usage_windows", c.sql, c.args, generic)
			require.LessOrEqual(t, read, c.max, "rows of rm_usage_windows read for %s (forced generic plan: %v), %d rows in the table",
				c.who, generic, history+10)
		}
	}
}
