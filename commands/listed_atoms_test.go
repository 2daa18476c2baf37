package commands_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/commands/commandstest"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// TestFirstAttemptChecksListedAtomsAsOfTheLock: a create's first attempt
// books from the free atoms its candidates query listed, before any lock
// (one round trip fewer). Whatever changed on that node between the listing
// and the lock must still stop the booking there: each case changes the
// best-fit node, n1 (one GPU), right after the create has read its
// candidates, and the create must land on n2 instead, n1 left as the change
// left it.
func TestFirstAttemptChecksListedAtomsAsOfTheLock(t *testing.T) {
	// takeN1 books n1's GPU for another tenant in the window from..to,
	// with vcpu vCPUs, which n1's counter holds whatever the window.
	takeN1 := func(from, to int, vcpu int64) func(t *testing.T, h *commands.Handlers, gpu string) {
		return func(t *testing.T, h *commands.Handlers, gpu string) {
			start, end := window(from, to)
			res, err := h.CreateReservation(context.Background(), tenantB, commands.CreateReservation{
				PoolID: commandstest.Pool, GPUs: 1, VCPU: vcpu, Start: start, End: end})
			require.NoError(t, err)
			require.Equal(t, []string{gpu}, res.Reservation.DeviceIDs, "the other tenant takes n1's GPU")
		}
	}
	cases := map[string]struct {
		change func(t *testing.T, h *commands.Handlers, gpu string)
		vcpu   int64 // the create's
	}{
		"its GPU booked by another tenant": {change: takeN1(1, 2, 0)},
		// n1 has 128 vCPUs (64 at ratio 2): another tenant's 100, booked
		// with its GPU in a later window, leave too few for the create's
		// 100; the GPU is free.
		"its vCPUs taken by another tenant": {change: takeN1(3, 4, 100), vcpu: 100},
		"the node cordoned": {change: func(t *testing.T, h *commands.Handlers, _ string) {
			_, err := h.CordonNode(context.Background(), commandstest.Operator, commands.CordonNode{NodeID: "n1"})
			require.NoError(t, err)
		}},
		"its GPU quarantined": {change: func(t *testing.T, h *commands.Handlers, gpu string) {
			_, err := h.QuarantineDevice(context.Background(), commandstest.Operator, commands.QuarantineDevice{DeviceID: gpu})
			require.NoError(t, err)
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.New(t)
			other := commands.New(d.Pool, commands.Config{})
			commandstest.Seed(t, d, other, 2)
			n1 := commandstest.Node(t, other, "n1", exclusive)
			commandstest.Node(t, other, "n2", exclusive, exclusive)

			tracer := &afterCandidates{statementCapture: newStatementCapture()}
			tracer.then = func() { tc.change(t, other, n1[0]) }
			h := commands.New(preparedPool(t, d.URL, 2, tracer), commands.Config{})
			start, end := window(1, 2)
			res, err := h.CreateReservation(context.Background(), tenantA, commands.CreateReservation{
				PoolID: commandstest.Pool, GPUs: 1, VCPU: tc.vcpu, Start: start, End: end})
			require.NoError(t, err)
			require.True(t, tracer.fired, "the change ran between the candidates and the booking")
			require.Equal(t, core.ReservationBooked, res.Reservation.State)
			require.Equal(t, "n2", res.Reservation.NodeID, "booked where the change left room, not on n1")
			freeAtoms, _ := tracer.last("DeviceFreeAtoms")
			require.NotEmpty(t, freeAtoms, "the replan read n2's atoms under its lock")

			var onN1 int
			require.NoError(t, d.Pool.QueryRow(context.Background(),
				`SELECT count(*) FROM allocations a JOIN reservations r ON r.id = a.reservation_id
				  WHERE a.node_id = 'n1' AND r.tenant_id = $1`, tenantA.Tenant).Scan(&onN1))
			require.Zero(t, onN1, "nothing of the first attempt stays on n1")
		})
	}
}

// afterCandidates is a statementCapture that runs then once, on the
// client, right after the first NodePlacementCandidates of the pool has
// run: between a create's candidates and its first placement attempt.
type afterCandidates struct {
	*statementCapture
	once  sync.Once
	then  func()
	fired bool
}

func (a *afterCandidates) TraceBatchQuery(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchQueryData) {
	a.statementCapture.TraceBatchQuery(ctx, c, d)
	if strings.HasPrefix(d.SQL, "-- name: NodePlacementCandidates ") && d.Err == nil {
		a.once.Do(func() { a.then(); a.fired = true })
	}
}

// A mode change between a create's candidates and its first attempt that
// keeps the atoms' ids but not their kind (a MIG instance of another
// profile, an MPS slot where a time-slice slot was) must stop the booking
// there as well: the create lands on n2, whose atoms are what it asked for.
func TestFirstAttemptChecksTheAtomsKindAsOfTheLock(t *testing.T) {
	cases := map[string]struct {
		layout, changed core.GPULayout
		create          commands.CreateReservation
	}{
		"a MIG instance of another profile": {
			layout:  core.GPULayout{Mode: core.GPUMIG, MIG: []string{"1g.10gb"}},
			changed: core.GPULayout{Mode: core.GPUMIG, MIG: []string{"7g.80gb"}},
			create:  commands.CreateReservation{MIGProfile: "1g.10gb"},
		},
		"an MPS slot for a time-slice one": {
			layout:  core.GPULayout{Mode: core.GPUTimeSlice, Slots: 1},
			changed: core.GPULayout{Mode: core.GPUMPS, Slots: 1},
			create:  commands.CreateReservation{SlotKind: core.GPUTimeSlice},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := pgtest.New(t)
			other := commands.New(d.Pool, commands.Config{})
			commandstest.Seed(t, d, other, 2)
			n1 := commandstest.Node(t, other, "n1", tc.layout)
			commandstest.Node(t, other, "n2", tc.layout, tc.layout)

			tracer := &afterCandidates{statementCapture: newStatementCapture()}
			tracer.then = func() {
				_, err := other.SetGPUMode(context.Background(), commandstest.Operator, commands.SetGPUMode{GPUID: n1[0], Layout: tc.changed})
				require.NoError(t, err)
			}
			h := commands.New(preparedPool(t, d.URL, 2, tracer), commands.Config{})
			create := tc.create
			create.PoolID, create.GPUs = commandstest.Pool, 1
			create.Start, create.End = window(1, 2)
			res, err := h.CreateReservation(context.Background(), tenantA, create)
			require.NoError(t, err)
			require.True(t, tracer.fired, "the mode change ran between the candidates and the booking")
			require.Equal(t, core.ReservationBooked, res.Reservation.State)
			require.Equal(t, "n2", res.Reservation.NodeID, "booked on an atom of the kind asked for, not on n1's changed one")

			var onN1 int
			require.NoError(t, d.Pool.QueryRow(context.Background(),
				`SELECT count(*) FROM device_bookings WHERE device_id LIKE $1 || '%'`, n1[0]).Scan(&onN1))
			require.Zero(t, onN1, "nothing booked on n1's changed GPU")
		})
	}
}
