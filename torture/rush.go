package torture

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// A rush is everyone booking the same hour at once: rushSize placers, each
// for a tenant of its own (a tenant's placements serialize on its quota
// rows), ask for a whole node's GPUs each in one window, released at once. Placers that
// decided on the same free GPUs lose the race, replan, and lose again: it is
// the contention that makes placements reach their replan cap
// (Handlers.PlacementAttempts), which the random mix alone rarely does.
// The rush books in a pool of its own (rushPool), which the mix's operator
// churn never touches: in the mix's pool, cordons, taints, quarantines and
// mode changes left as few as one node of four whole GPUs at some seeds,
// and a rush there raced for nothing.
const (
	rushSize  = 16
	rushNodes = rushSize / 2 // half the placers lose
	rushGPUs  = 4            // a whole node of the rush pool
	rushEvery = 500          // operations between rushes; the first after rushEvery/2
	// rushAhead puts the rush's window beyond every window of the mix, so
	// that it contends with itself only.
	rushAhead = 30 * time.Minute
)

// rush runs one rush and tallies its creates with the others: whether the
// rush's creates book counts towards the run's booked share like any other.
// Every reservation it made is then released or cancelled.
func (r *run) rush(ctx context.Context) error {
	start := r.now().Add(rushAhead)
	ctx = withOp(ctx, "create")
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		made  []core.Reservation
	)
	gate := make(chan struct{})
	barrier := newRushBarrier(rushSize)
	for i := range rushSize {
		actor := rushTenant(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, placer := barrier.placer(ctx)
			defer placer.arrive()
			<-gate
			res, err := r.h.CreateReservation(ctx, actor, commands.CreateReservation{PoolID: rushPool, GPUs: rushGPUs,
				Start: start, End: start.Add(time.Minute)})
			out, err := outcomeOf(err)
			if err == nil && out == "ok" {
				out = string(res.Reservation.State)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if out == string(res.Reservation.State) {
				made = append(made, res.Reservation)
			}
			r.tally.add("create", out)
		}()
	}
	close(gate)
	wg.Wait()
	if first != nil {
		return fmt.Errorf("rush: %w", first)
	}
	for _, rv := range made {
		if err := r.giveBack(ctx, rv); err != nil {
			return err
		}
	}
	return nil
}

// giveBack releases a booked or active reservation and cancels a pending
// one. The background may place a pending one meanwhile, so a refusal is
// retried on the fresh state, a few times.
func (r *run) giveBack(ctx context.Context, rv core.Reservation) error {
	actor := core.Actor{Tenant: rv.Tenant, Identity: "torture@" + rv.Tenant, Role: core.RoleMember}
	for range 3 {
		cur, err := r.h.GetReservation(ctx, actor, rv.ID)
		if err != nil {
			return fmt.Errorf("rush clean-up: %w", err)
		}
		switch {
		case !core.ReservationHoldsQuota(cur.State):
			return nil
		case cur.State == core.ReservationPending:
			_, err = r.h.CancelReservation(ctx, actor, commands.CancelReservation{ReservationID: rv.ID})
		default:
			_, err = r.h.ReleaseReservation(ctx, actor, commands.ReleaseReservation{ReservationID: rv.ID})
		}
		if out, err := outcomeOf(err); err != nil {
			return fmt.Errorf("rush clean-up: %w", err)
		} else if out == "ok" {
			return nil
		}
	}
	r.violation("rush", "reservation %s could not be given back in 3 tries", rv.ID)
	return nil
}

// rushTenant is the i-th rush's tenant.
func rushTenant(i int) core.Actor {
	t := fmt.Sprintf("rush%02d", i)
	return core.Actor{Tenant: t, Identity: "torture@" + t, Role: core.RoleMember}
}
