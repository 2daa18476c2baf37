package upgrade_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/authn"
	"github.com/bettercompute/compute/internal/db"
)

// A release is a fixture: the database of an earlier release, populated
// through that release's API by testdata/populate.sh and stopped, with what
// that run printed and created. To make one again (COMMIT the release's
// commit, OLD a scratch directory):
//
//  1. Build that commit's binary (git worktree add OLD COMMIT; cd OLD;
//     go build -o bin/compute ./cmd/compute) and start it on an empty
//     database, with a webhook receiver that answers 2xx on loopback:
//     COMPUTE_WEBHOOK_ALLOW_PRIVATE=true DATABASE_URL=… compute serve --demo
//     (for a database, createdb in the cluster of go run ./devtools/withpg).
//  2. With the tokens it printed, run this tree's testdata/populate.sh
//     against it (COMPUTE=OLD/bin/compute COMPUTE_SERVER=… OPS=… ACME=…
//     HOOK_URL=…): a token issued by a token, a webhook endpoint,
//     reservations booked, active, released, pending and, where the
//     release accepts them, two longer than 366 days (one active, one
//     booked); a pool with overcommit ratios, a tainted node with a
//     reservation that tolerates it, a preemptible priority class with a
//     reservation in it, a fair share, quotas, a token that expires where
//     the release has them (bf26bb7's run was made before these), and an
//     instance; then one event after the cursor it prints.
//  3. Stop the server (SIGTERM) and dump the database as plain SQL, without
//     the hourly usage windows (36,000 rows for two long reservations; the
//     test rebuilds them from the log):
//     pg_dump --inserts --no-owner --no-privileges --no-comments
//     --exclude-table-data=public.rm_usage_windows DB |
//     grep -v '^\\\(un\)\?restrict ' > testdata/release-COMMIT.sql
//  4. Add a release below with the ids, secrets and cursor from that run.
type release struct {
	fixture string
	// upgradedAt is the business time the test runs at after the upgrade:
	// an hour after the fixture's run, inside every reservation's window
	// but the booked ones'.
	upgradedAt time.Time

	// The demo's tenant token (acme, member), and bob's: an operator token
	// issued by the demo's operator token, which issued carol's.
	secretAcme, secretBob, secretCarol string

	// Every reservation the run made, with its state when it stopped.
	states    map[string]core.State
	rsvActive string // 2 GPUs, a day, with an instance; its spec:
	spec      string
	rsvBooked string    // an hour, two days ahead, extended once
	bookedEnd time.Time // a later end for it
	// rsvLongBooked is one longer than 366 days, from three days ahead
	// (797 days), from a release before their ceiling; "" for a release
	// that refuses them.
	rsvLongBooked string
	// rsvRelease are released after rsvActive, in this order.
	rsvRelease []string

	// A cursor of acme's events (GET /v1/events nextCursor) read before the
	// last event of the run, reservation.extended of rsvBooked.
	cursorBeforeExtend string

	// more checks what this fixture has beyond the others, after the upgrade.
	more func(t *testing.T, u upgraded)
}

// upgraded is what a release's checks use on its migrated database.
type upgraded struct {
	pool *pgxpool.Pool
	q    *db.Queries
	auth *authn.Authenticator
}

var releases = map[string]release{
	// bf26bb7: the last commit of 4 December 2026, at migration 0034.
	"bf26bb7": {
		fixture:     "testdata/release-bf26bb7.sql",
		upgradedAt:  time.Date(2026, 12, 6, 9, 30, 0, 0, time.UTC),
		secretAcme:  "bc_lib1CdkM3m84C5Mchd_Hxc5Xk1mb63qsTQAjEsY9GzY",
		secretBob:   "bc_xDrVmIVHZAQ_fk5ikTKufsWJnRflkjYElMTrC44O5lA",
		secretCarol: "bc_fRTo6AUWfz_h9OZ78blSUOIZPVOXr5YCDxWWuZAIaH4",
		states: map[string]core.State{
			"rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171": core.ReservationActive,
			"rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4": core.ReservationBooked,
			"rsv_01a24a6e-f959-7444-a522-b4cb947e7f89": core.ReservationReleased,
			"rsv_01a24a6e-f9df-7ea6-8f79-b6ebf52a1e0e": core.ReservationPending, // 8 GPUs: more than were free
			"rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26": core.ReservationBooked,  // 797 days, from three days ahead
			"rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11": core.ReservationActive,  // 700 days, from its booking
		},
		rsvActive:          "rsv_01a24a6e-f8bb-7556-8a41-4a0aeaf76171",
		spec:               `{"gpu":{"count":2,"kind":"gpu","model":"H100-80GB"},"vcpu":4,"memoryMb":8192,"diskGb":10,"tolerations":[]}`,
		rsvBooked:          "rsv_01a24a6e-f929-7845-be67-8401cd1cc3e4",
		bookedEnd:          time.Date(2026, 12, 8, 12, 18, 36, 0, time.UTC),
		rsvLongBooked:      "rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26",
		rsvRelease:         []string{"rsv_01a24a6f-066f-7e5b-af2c-25f76cf53c11", "rsv_01a24a6e-f9a2-781b-8a5a-5ff9d26e2a26"},
		cursorBeforeExtend: "00000000000004a00000000000000047",
	},
	// 3948e75: the last commit of 6 December 2026, at migration 0056. It
	// refused reservations longer than 366 days; the other things its run
	// made are checked by more3948e75.
	"3948e75": {
		fixture:     "testdata/release-3948e75.sql",
		upgradedAt:  time.Date(2026, 12, 7, 4, 12, 0, 0, time.UTC),
		secretAcme:  "bc_-4FD8E0riIisYk0f3suX540gdWJcDujNnXjlIjqic44",
		secretBob:   "bc_YL3Xxumctg0nU9CaM2_obK3sY5G1xB8h6m_48iSg0Nc",
		secretCarol: "bc_tLGtbsDN18-PPYISE5O2CFXe1sBrEXfNexA1neWphvg",
		states: map[string]core.State{
			"rsv_01a24e7b-eab2-700c-bd50-30e24ff97714": core.ReservationActive,
			"rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1": core.ReservationBooked,
			"rsv_01a24e7c-017e-7347-a620-28413c3db9d4": core.ReservationReleased,
			"rsv_01a24e7c-1c1c-78e6-8a6e-2aa6d8c99706": core.ReservationPending,
			rsvTolerating: core.ReservationActive,
			rsvBatch:      core.ReservationActive,
		},
		rsvActive:          "rsv_01a24e7b-eab2-700c-bd50-30e24ff97714",
		spec:               `{"gpu":{"count":2,"kind":"gpu","model":"H100-80GB"},"vcpu":4,"memoryMb":8192,"diskGb":10,"tolerations":[]}`,
		rsvBooked:          "rsv_01a24e7b-f5a3-7021-8783-17bdb99914e1",
		bookedEnd:          time.Date(2026, 12, 9, 6, 11, 0, 0, time.UTC),
		rsvRelease:         []string{rsvTolerating, rsvBatch},
		cursorBeforeExtend: "000000000000083d0000000000000053",
		more:               more3948e75,
	},
}

// The reservations of 3948e75's run that the older fixture has no kind of.
const (
	rsvTolerating = "rsv_01a24e7c-3a3a-760b-a030-d9839d315bdf" // an L4 slot on the tainted demo-node-3
	rsvBatch      = "rsv_01a24e7c-4935-75ca-90fb-54a7efd68c5c" // a MIG instance, priority class upg-batch
)

// more3948e75 checks what 3948e75's run made that bf26bb7's did not.
func more3948e75(t *testing.T, u upgraded) {
	ctx := context.Background()
	// A token with an expiry keeps it, and authenticates until then.
	dave, err := u.auth.Authenticate(ctx, "bc_4JZTmPByNeVS_UvUzqfqzai1X7IAvZBwXG86PQGeAFk")
	require.NoError(t, err)
	require.Equal(t, core.Actor{TokenID: dave.TokenID, Tenant: "acme", Identity: "dave", Role: core.RoleViewer}, dave)
	var expires time.Time
	require.NoError(t, u.pool.QueryRow(ctx, `SELECT expires_at FROM api_tokens WHERE id = $1`, dave.TokenID).Scan(&expires))
	require.Equal(t, time.Date(2027, 12, 7, 3, 11, 40, 711313000, time.UTC), expires.UTC())

	// The tolerating reservation keeps its toleration, on the tainted node.
	rm, err := u.q.RmReservationGet(ctx, rsvTolerating)
	require.NoError(t, err)
	require.Equal(t, []string{"dedicated=ml"}, rm.Tolerations)
	var taints, pools []string
	require.NoError(t, u.pool.QueryRow(ctx, `SELECT taints FROM rm_fleet_nodes WHERE id = 'demo-node-3'`).Scan(&taints))
	require.Equal(t, []string{"dedicated=ml"}, taints)

	// The pool with overcommit ratios keeps them.
	require.NoError(t, u.pool.QueryRow(ctx, `SELECT ARRAY[cpu_ratio::text, memory_ratio::text, disk_ratio::text] FROM pools
		WHERE id = 'upg-ratio-pool'`).Scan(&pools))
	require.Equal(t, []string{"2", "1.5", "1.25"}, pools)

	// acme's priority class, fair share and quotas.
	var class string
	require.NoError(t, u.pool.QueryRow(ctx, `SELECT priority_class FROM reservations WHERE id = $1`, rsvBatch).Scan(&class))
	require.Equal(t, "upg-batch", class)
	var share int64
	require.NoError(t, u.pool.QueryRow(ctx, `SELECT share FROM tenant_fair_shares WHERE tenant_id = 'acme'`).Scan(&share))
	require.EqualValues(t, 4, share)
	var quotas []string
	require.NoError(t, u.pool.QueryRow(ctx, `SELECT array_agg(resource || '=' || max ORDER BY resource) FROM quota_usage
		WHERE tenant_id = 'acme' AND resource IN ('gpu', 'vcpu')`).Scan(&quotas))
	require.Equal(t, []string{"gpu=64", "vcpu=512"}, quotas)
}
