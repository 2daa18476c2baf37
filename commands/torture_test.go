package commands_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/invariants"
)

// The size of the capacity torture test. Raise them for a longer run; CI
// keeps it under a minute with -race on two cores.
const (
	tortureOps         = 1000
	tortureConcurrency = 32
	tortureCheckEvery  = 8 // worker 0 checks invariants in a snapshot every N of its ops
)

// tortureFleet is a small, contended fleet: exclusive, MIG and time-slice
// GPUs on four nodes, and tight quotas.
func tortureFleet(t *testing.T, f *fixture) (gpus []string) {
	gpus = append(gpus, f.node(t, "n0", exclusive, exclusive)...)
	gpus = append(gpus, f.node(t, "n1", exclusive, exclusive)...)
	gpus = append(gpus, f.node(t, "n2", core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}},
		core.GPULayout{Mode: core.GPUTimeSlice, Slots: 4})...)
	gpus = append(gpus, f.node(t, "n3", exclusive, core.GPULayout{Mode: core.GPUMPS, Slots: 2})...)
	for _, tn := range []string{"acme", "globex"} {
		f.quota(t, tn, "gpu", 14)
		f.quota(t, tn, "vcpu", 200)
	}
	return gpus
}

// torture tallies outcomes by code, so the test can show it exercised the
// paths it claims to.
type tally struct {
	mu sync.Mutex
	m  map[string]int
}

func (t *tally) add(k string) { t.mu.Lock(); t.m[k]++; t.mu.Unlock() }

// TestCapacityTorture attacks all five rules at once: concurrent creates,
// extends, releases, cancels, pending retries and expiries, against cordons,
// taints, health flips, quarantines and GPU mode changes, with the
// simulated clock moving. Every invariant is checked in SQL on a sampled
// schedule during the run and at the end.
func TestCapacityTorture(t *testing.T) {
	t.Parallel()
	f := setup(t)
	gpus := tortureFleet(t, f)
	nodes := []string{"n0", "n1", "n2", "n3"}
	layouts := []core.GPULayout{
		{Mode: core.GPUExclusive}, {Mode: core.GPUTimeSlice, Slots: 2}, {Mode: core.GPUMPS, Slots: 3},
		{Mode: core.GPUMIG, MIG: []string{"1g.10gb", "1g.10gb", "3g.40gb"}},
	}
	var (
		done   atomic.Int64
		counts = &tally{m: map[string]int{}}
		checks atomic.Int64
		ids    = &reservationIDs{m: map[string][]string{}}
	)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, tortureConcurrency)
	for w := range tortureConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 42))
			actor := tenantA
			if w%2 == 1 {
				actor = tenantB
			}
			for i := 0; done.Add(1) <= tortureOps; i++ {
				op, err := tortureOp(ctx, f, r, actor, nodes, gpus, layouts, ids)
				if err == nil {
					counts.add(op + ":ok")
				} else {
					code := core.CodeOf(err)
					if code == core.CodeInternal && isAgain(err) {
						code = "AGAIN"
					}
					counts.add(op + ":" + string(code))
					if code == core.CodeInternal {
						errs <- fmt.Errorf("%s: %w", op, err)
						return
					}
				}
				if w == 0 && i%tortureCheckEvery == tortureCheckEvery-1 {
					v := snapshotCheck(ctx, t, f)
					checks.Add(1)
					if len(v) > 0 {
						errs <- fmt.Errorf("invariants during the run: %v", v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}

	v, err := invariants.Check(ctx, f.d.Q)
	require.NoError(t, err)
	byName := map[string]int{}
	for _, x := range v {
		byName[x.Invariant]++
	}
	for _, name := range invariants.All {
		t.Logf("invariant %-26s %d violations", name, byName[name])
	}
	t.Logf("outcomes: %v; sampled checks: %d", counts.m, checks.Load())
	t.Logf("torture: %d ops, %d violations", tortureOps, len(v))
	require.Empty(t, v)
	// The run must have exercised contention, not just succeeded.
	require.Positive(t, counts.m["create:ok"])
	require.Positive(t, counts.m["release:ok"]+counts.m["cancel:ok"])
	require.Positive(t, counts.m["cordon:ok"])
	require.Positive(t, counts.m["create:QUOTA_EXCEEDED"]+counts.m["create:pending"], "quotas or capacity must bind")
	require.Positive(t, checks.Load())
}

func isAgain(err error) bool {
	return err != nil && len(err.Error()) > 9 && err.Error()[:9] == "run again"
}

// snapshotCheck runs every invariant inside one REPEATABLE READ snapshot,
// while the torture continues around it.
func snapshotCheck(ctx context.Context, t *testing.T, f *fixture) []invariants.Violation {
	var v []invariants.Violation
	err := pgx.BeginTxFunc(ctx, f.d.Pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		v, err = invariants.Check(ctx, db.New(tx))
		return err
	})
	if err != nil {
		return []invariants.Violation{{Invariant: "check", Detail: err.Error()}}
	}
	return v
}

// reservationIDs are the reservations each tenant created, so that
// extends, releases and cancels mostly hit the caller's own.
type reservationIDs struct {
	sync.Mutex
	m map[string][]string
}

func (r *reservationIDs) add(tenant, id string) {
	r.Lock()
	defer r.Unlock()
	r.m[tenant] = append(r.m[tenant], id)
}

// random picks one of tenant's reservations, or, one time in ten, another
// tenant's (which must be NOT_FOUND).
func (r *reservationIDs) random(rnd *rand.Rand, tenant string) (string, bool) {
	r.Lock()
	defer r.Unlock()
	if rnd.IntN(10) == 0 {
		for tn, ids := range r.m {
			if tn != tenant && len(ids) > 0 {
				return ids[rnd.IntN(len(ids))], true
			}
		}
	}
	ids := r.m[tenant]
	if len(ids) == 0 {
		return "", false
	}
	return ids[rnd.IntN(len(ids))], true
}

// tortureOp runs one random operation and names it.
func tortureOp(ctx context.Context, f *fixture, r *rand.Rand, actor core.Actor, nodes, gpus []string,
	layouts []core.GPULayout, ids *reservationIDs) (string, error) {
	h := f.h
	switch n := r.IntN(100); {
	case n < 40:
		from := r.IntN(6)
		cmd := commands.CreateReservation{PoolID: "fra1-gpu", GPUs: 1 + r.IntN(2), VCPU: int64(r.IntN(4) * 8),
			Start: epochPlus(time.Duration(from) * time.Hour), End: epochPlus(time.Duration(from+1+r.IntN(3)) * time.Hour)}
		switch r.IntN(4) {
		case 1:
			cmd.MIGProfile = "1g.10gb"
		case 2:
			cmd.SlotKind = core.GPUTimeSlice
		}
		if r.IntN(4) == 0 {
			cmd.Tolerations = []string{"maintenance"}
		}
		res, err := h.CreateReservation(ctx, actor, cmd)
		if err == nil {
			ids.add(actor.Tenant, res.Reservation.ID)
			if res.Reservation.State == core.ReservationPending {
				return "create:pending", nil
			}
		}
		return "create", err
	case n < 50:
		id, ok := ids.random(r, actor.Tenant)
		if !ok {
			return "extend", nil
		}
		cur, err := h.GetReservation(ctx, actor, id)
		if err != nil {
			return "extend", err
		}
		_, err = h.ExtendReservation(ctx, actor, commands.ExtendReservation{ReservationID: id, NewEnd: cur.End.Add(time.Duration(1+r.IntN(2)) * time.Hour)})
		return "extend", err
	case n < 68:
		id, ok := ids.random(r, actor.Tenant)
		if !ok {
			return "release", nil
		}
		if cur, err := h.GetReservation(ctx, actor, id); err == nil && cur.State == core.ReservationPending {
			_, err := h.CancelReservation(ctx, actor, commands.CancelReservation{ReservationID: id})
			return "cancel", err
		}
		_, err := h.ReleaseReservation(ctx, actor, commands.ReleaseReservation{ReservationID: id})
		return "release", err
	case n < 70:
		id, ok := ids.random(r, actor.Tenant)
		if !ok {
			return "cancel", nil
		}
		_, err := h.CancelReservation(ctx, actor, commands.CancelReservation{ReservationID: id})
		return "cancel", err
	case n < 74:
		id, ok := ids.random(r, actor.Tenant)
		if !ok {
			return "retry", nil
		}
		return "retry", h.RetryPending(ctx, id)
	case n < 76:
		id, ok := ids.random(r, actor.Tenant)
		if !ok {
			return "expire", nil
		}
		if _, err := f.d.Q.SimClockAdvance(ctx, (10 * time.Minute).Seconds()); err != nil {
			return "expire", err
		}
		return "expire", h.ExpireReservation(ctx, id)
	case n < 82:
		node := nodes[r.IntN(len(nodes))]
		if r.IntN(3) == 0 {
			_, err := h.CordonNode(ctx, operator, commands.CordonNode{NodeID: node})
			return "cordon", err
		}
		_, err := h.UncordonNode(ctx, operator, commands.CordonNode{NodeID: node})
		return "uncordon", err
	case n < 87:
		node := nodes[r.IntN(len(nodes))]
		if r.IntN(2) == 0 {
			_, err := h.TaintNode(ctx, operator, commands.TaintNode{NodeID: node, Taint: "maintenance"})
			return "taint", err
		}
		_, err := h.UntaintNode(ctx, operator, commands.TaintNode{NodeID: node, Taint: "maintenance"})
		return "untaint", err
	case n < 92:
		_, err := h.SetDeviceHealth(ctx, operator, commands.SetDeviceHealth{DeviceID: gpus[r.IntN(len(gpus))], Healthy: r.IntN(3) != 0})
		return "health", err
	case n < 96:
		g := gpus[r.IntN(len(gpus))]
		if r.IntN(3) == 0 {
			_, err := h.QuarantineDevice(ctx, operator, commands.QuarantineDevice{DeviceID: g})
			return "quarantine", err
		}
		_, err := h.UnquarantineDevice(ctx, operator, commands.QuarantineDevice{DeviceID: g})
		return "unquarantine", err
	default:
		_, err := h.SetGPUMode(ctx, operator, commands.SetGPUMode{GPUID: gpus[r.IntN(len(gpus))], Layout: layouts[r.IntN(len(layouts))]})
		return "setMode", err
	}
}

func epochPlus(d time.Duration) time.Time { s, _ := window(0, 0); return s.Add(d) }
