package commands_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/invariants"
)

// TestCheckerCatchesEachDisabledGuard disables one guard at a time on a
// scratch database and does what that guard exists to stop, with
// hand-written SQL standing in for a buggy module. The invariant checker
// must name the breach; with the guard in place, the same write must fail.
func TestCheckerCatchesEachDisabledGuard(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		invariant string
		disable   string // DDL that removes the guard ("" when the breach needs none)
		guarded   bool   // whether the breaching write fails while the guard stands
		breach    string
	}{{
		name: "exclusion constraint", invariant: invariants.BookingOverlap, guarded: true,
		disable: `ALTER TABLE device_bookings DROP CONSTRAINT device_bookings_no_overlap`,
		breach: `INSERT INTO device_bookings (device_id, allocation_id, during)
		         SELECT device_id, allocation_id, during FROM device_bookings LIMIT 1`,
	}, {
		name: "node counter check", invariant: invariants.NodeCounter, guarded: true,
		disable: `ALTER TABLE node_resources DROP CONSTRAINT node_resources_within_capacity`,
		breach:  `UPDATE node_resources SET allocated = allocated + 100000 WHERE node_id = 'n1' AND resource = 'vcpu'`,
	}, {
		name: "quota check", invariant: invariants.Quota, guarded: true,
		disable: `ALTER TABLE quota_usage DROP CONSTRAINT quota_usage_within_max`,
		breach:  `UPDATE quota_usage SET used = max + 1 WHERE tenant_id = 'acme' AND resource = 'gpu'`,
	}, {
		name: "atom rule: parent booked under a booked atom", invariant: invariants.ParentChildOverlap,
		breach: `INSERT INTO device_bookings (device_id, allocation_id, during)
		         SELECT 'GPU-n1-1', b.allocation_id, b.during FROM device_bookings b WHERE b.device_id LIKE 'GPU-n1-1/%' LIMIT 1`,
	}, {
		name: "placer without FOR SHARE: booking after a cordon", invariant: invariants.BookingAfterCordon,
		breach: `INSERT INTO device_bookings (device_id, allocation_id, during)
		         SELECT 'GPU-n1-0', allocation_id, tstzrange(upper(during), upper(during) + interval '1 hour')
		           FROM device_bookings WHERE device_id = 'GPU-n1-0' LIMIT 1`,
	}, {
		name: "reservation of a class that does not exist", invariant: invariants.PriorityClass,
		breach: `UPDATE reservations SET priority_class = 'gone' WHERE id = (SELECT min(id) FROM reservations)`,
	}, {
		name: "reservation that changed the priority it copied", invariant: invariants.PriorityClass,
		breach: `UPDATE reservations SET priority = 7 WHERE id = (SELECT min(id) FROM reservations)`,
	}, {
		name: "transition without an event", invariant: invariants.EventVersions,
		breach: `UPDATE nodes SET version = version + 1 WHERE id = 'n1'`,
	}, {
		name: "fair share set without an event", invariant: invariants.EventVersions,
		breach: `INSERT INTO tenant_fair_shares (tenant_id, share, version) VALUES ('acme', 2, 1)`,
	}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t)
			f.node(t, "n1", exclusive, core.GPULayout{Mode: core.GPUTimeSlice, Slots: 2})
			f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, VCPU: 8})
			f.reserve(t, tenantA, commands.CreateReservation{GPUs: 1, SlotKind: core.GPUTimeSlice})
			_, err := f.h.CordonNode(f.ctx, operator, commands.CordonNode{NodeID: "n1"})
			require.NoError(t, err)
			f.requireInvariants(t)

			if c.guarded {
				_, err := f.d.Pool.Exec(f.ctx, c.breach)
				require.Error(t, err, "the guard must refuse the breach")
			}
			if c.disable != "" {
				_, err := f.d.Pool.Exec(f.ctx, c.disable)
				require.NoError(t, err)
			}
			tag, err := f.d.Pool.Exec(f.ctx, c.breach)
			require.NoError(t, err)
			require.Equal(t, int64(1), tag.RowsAffected())

			v, err := invariants.Check(f.ctx, f.d.Q)
			require.NoError(t, err)
			names := map[string]bool{}
			for _, x := range v {
				names[x.Invariant] = true
			}
			require.True(t, names[c.invariant], "want a %s violation, got %v", c.invariant, v)
		})
	}
}
