package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/workqueue"
)

// The operation mix, in percent. Creates dominate, as in a real fleet; the
// clock ticks often enough that windows of a few simulated minutes start
// and end while the run goes on; every fleet operation is there, and each
// one that takes capacity away is undone more often than done.
var mix = []weighted{
	{"create", 40}, {"extend", 8}, {"release", 14}, {"cancel", 3}, {"get", 5}, {"retry", 2},
	{"tick", 14},
	{"cordon", 2}, {"drain", 2}, {"taint", 2}, {"health", 2}, {"quarantine", 2}, {"setMode", 2}, {"liveness", 2},
}

// disableOdds is how often a fleet operation takes capacity away (cordon,
// drain, taint, unhealthy, quarantine) rather than giving it back: one in
// disableOdds.
const disableOdds = 6

// The simulated time of one run: each tick moves the clock by tickStep
// (under the liveness outage threshold, so a tick is not an outage) and
// reservations start within startWithin of now and last minDuration plus
// up to extraDuration.
const (
	tickStep      = 20 * time.Second
	startWithin   = 2 * time.Minute
	minDuration   = time.Minute
	extraDuration = 3 * time.Minute
)

// reserveRelease are the kinds on the reserve/release path, where no
// deadlock is acceptable.
var reserveRelease = map[string]bool{"create": true, "extend": true, "release": true, "cancel": true, "retry": true}

// classMix is how often a create names each priority class, in percent
// ("" is the default class, standard).
var classMix = []weighted{{"", 50}, {classBatch, 35}, {classProd, 15}}

// pickClass draws a create's priority class from classMix.
func pickClass(r *rand.Rand) string { return draw(r, classMix) }

// refusedIn is the state a refused transition names ("reservation is
// preempted and cannot become released", core.CheckTransition, or a cancel's
// "reservation rsv_… is booked and cannot become cancelled: …"), or "" for
// any other refusal: the refusal is then an observation of that state.
func refusedIn(err error) core.State {
	var e *core.Error
	if !errors.As(err, &e) || e.Code != core.CodeConflict {
		return ""
	}
	m := refusedState.FindStringSubmatch(e.Message)
	if m == nil {
		return ""
	}
	return core.State(m[1])
}

var refusedState = regexp.MustCompile(`^reservation (?:rsv_\S+ )?is ([a-z]+) and cannot become [a-z]+(?:: .*)?$`)

// pick draws an operation kind from mix.
func pick(r *rand.Rand) string { return draw(r, mix) }

// weighted is one outcome of a draw and its chances, in percent: the
// percents of a list add up to 100.
type weighted struct {
	kind    string
	percent int
}

// draw picks an outcome of choices with its chances.
func draw(r *rand.Rand, choices []weighted) string {
	n := r.IntN(100)
	for _, c := range choices {
		if n < c.percent {
			return c.kind
		}
		n -= c.percent
	}
	return choices[0].kind
}

// worker is one goroutine of the run, acting for one tenant.
type worker struct {
	id    int
	r     *rand.Rand
	actor core.Actor
	run   *run
}

// op runs one operation of kind and returns its outcome for the tally:
// "ok", "booked" or "pending" for a create, or the refusal's code.
func (w *worker) op(ctx context.Context, kind string) (string, error) {
	ctx = withOp(ctx, kind)
	h, f := w.run.h, w.run.fleet
	switch kind {
	case "create":
		return w.create(ctx)
	case "extend", "release", "cancel", "get", "retry":
		return w.onReservation(ctx, kind)
	case "tick":
		return outcomeOf(w.run.tick(ctx, tickStep))
	case "cordon":
		node := f.nodes[w.r.IntN(len(f.nodes))]
		if w.disable() {
			_, err := h.CordonNode(ctx, operator, commands.CordonNode{NodeID: node})
			return outcomeOf(err)
		}
		_, err := h.UncordonNode(ctx, operator, commands.CordonNode{NodeID: node})
		return outcomeOf(err)
	case "drain":
		node := f.nodes[w.r.IntN(len(f.nodes))]
		if w.disable() {
			_, err := h.DrainNode(ctx, operator, commands.DrainNode{NodeID: node})
			return outcomeOf(err)
		}
		_, err := h.UndrainNode(ctx, operator, commands.DrainNode{NodeID: node})
		return outcomeOf(err)
	case "taint":
		cmd := commands.TaintNode{NodeID: f.nodes[w.r.IntN(len(f.nodes))], Taint: "maintenance"}
		if w.disable() {
			_, err := h.TaintNode(ctx, operator, cmd)
			return outcomeOf(err)
		}
		_, err := h.UntaintNode(ctx, operator, cmd)
		return outcomeOf(err)
	case "health":
		_, err := h.SetDeviceHealth(ctx, operator, commands.SetDeviceHealth{DeviceID: f.gpus[w.r.IntN(len(f.gpus))], Healthy: !w.disable()})
		return outcomeOf(err)
	case "quarantine":
		cmd := commands.QuarantineDevice{DeviceID: f.gpus[w.r.IntN(len(f.gpus))]}
		if w.disable() {
			_, err := h.QuarantineDevice(ctx, operator, cmd)
			return outcomeOf(err)
		}
		_, err := h.UnquarantineDevice(ctx, operator, cmd)
		return outcomeOf(err)
	case "setMode":
		gpu := f.gpus[w.r.IntN(len(f.gpus))]
		layout := f.layouts[gpu]
		if w.r.IntN(3) == 0 {
			layout = alternativeLayouts[w.r.IntN(len(alternativeLayouts))]
		}
		_, err := h.SetGPUMode(ctx, operator, commands.SetGPUMode{GPUID: gpu, Layout: layout})
		return outcomeOf(err)
	case "liveness":
		return outcomeOf(w.run.flipSession(ctx, f.daemonized[w.r.IntN(len(f.daemonized))]))
	}
	return "", fmt.Errorf("unknown operation %q", kind)
}

// alternativeLayouts are the modes a GPU is switched to now and then; it
// goes back to its own layout twice as often.
var alternativeLayouts = []core.GPULayout{
	exclusive, {Mode: core.GPUTimeSlice, Slots: 2}, {Mode: core.GPUMPS, Slots: 3},
	{Mode: core.GPUMIG, MIG: []string{"1g.10gb", "1g.10gb", "3g.40gb"}},
}

func (w *worker) disable() bool { return w.r.IntN(disableOdds) == 0 }

// outcomeOf is "ok" or the error's code; an internal error is returned.
func outcomeOf(err error) (string, error) {
	if err == nil {
		return "ok", nil
	}
	if code := core.CodeOf(err); code != core.CodeInternal {
		return string(code), nil
	}
	return "", err
}

// create books a reservation for the worker's tenant: whole GPUs mostly,
// a MIG instance, a time-slice or MPS slot, or vCPU only.
func (w *worker) create(ctx context.Context) (string, error) {
	now := w.run.now()
	start := now.Add(time.Duration(w.r.Int64N(int64(startWithin))))
	cmd := commands.CreateReservation{PoolID: pool, Start: start,
		End: start.Add(minDuration + time.Duration(w.r.Int64N(int64(extraDuration))))}
	switch n := w.r.IntN(20); {
	case n < 11:
		cmd.GPUs, cmd.VCPU = 1+w.r.IntN(2), int64(w.r.IntN(3)*8)
	case n < 14:
		cmd.GPUs, cmd.MIGProfile = 1, "1g.10gb"
	case n < 17:
		cmd.GPUs, cmd.SlotKind = 1, core.GPUTimeSlice
	case n < 18:
		cmd.GPUs, cmd.SlotKind = 1, core.GPUMPS
	default:
		cmd.VCPU = 8
	}
	if w.r.IntN(4) == 0 {
		cmd.Tolerations = []string{"maintenance"}
	}
	cmd.PriorityClass = pickClass(w.r)
	called := w.run.hist.now()
	res, err := w.run.h.CreateReservation(ctx, w.actor, cmd)
	if err != nil {
		return outcomeOf(err)
	}
	rv := res.Reservation
	w.run.hist.add(w.id, call{Reservation: rv.ID, Kind: "create", Class: cmd.PriorityClass},
		outcome{OK: true, State: rv.State, Version: rv.Version, End: rv.End, Preemptible: rv.Preemptible}, called, w.run.hist.now())
	w.run.ids.add(w.actor.Tenant, rv.ID)
	return string(rv.State), nil
}

// onReservation runs kind on one of the tenant's reservations or, one time
// in ten, on another tenant's, which must answer NOT_FOUND whatever kind.
func (w *worker) onReservation(ctx context.Context, kind string) (string, error) {
	id, own, ok := w.run.ids.random(w.r, w.actor.Tenant)
	if !ok {
		return "none-yet", nil
	}
	return w.call(ctx, kind, id, own)
}

// call runs kind on reservation id (own: one of the worker's tenant's) and
// records it in the history.
func (w *worker) call(ctx context.Context, kind, id string, own bool) (string, error) {
	h := w.run.h
	if kind == "retry" {
		// The background retries pending reservations too: this races it.
		err := h.RetryPending(ctx, id)
		if workqueue.IsAgain(err) {
			return "still-pending", nil
		}
		return outcomeOf(err)
	}
	in := call{Reservation: id, Kind: kind}
	called := w.run.hist.now()
	var res core.Reservation
	var err error
	switch kind {
	case "get":
		res, err = h.GetReservation(ctx, w.actor, id)
	case "extend":
		var cur core.Reservation
		if cur, err = h.GetReservation(ctx, w.actor, id); err == nil {
			in.NewEnd = cur.End.Add(time.Duration(1+w.r.IntN(2)) * time.Minute)
			var r commands.ReservationResult
			r, err = h.ExtendReservation(ctx, w.actor, commands.ExtendReservation{ReservationID: id, NewEnd: in.NewEnd})
			res = r.Reservation
		}
	case "release":
		var r commands.ReservationResult
		r, err = h.ReleaseReservation(ctx, w.actor, commands.ReleaseReservation{ReservationID: id})
		res = r.Reservation
	case "cancel":
		var r commands.ReservationResult
		r, err = h.CancelReservation(ctx, w.actor, commands.CancelReservation{ReservationID: id})
		res = r.Reservation
	}
	returned := w.run.hist.now()
	code := core.CodeOf(err)
	if !own {
		if code != core.CodeNotFound {
			w.run.violation("tenant-isolation", "%s of another tenant's reservation %s by %s answered %v, not NOT_FOUND",
				kind, id, w.actor.Tenant, err)
		}
		return "other-tenant", nil
	}
	if err != nil && code == core.CodeInternal {
		return "", err
	}
	out := outcome{OK: err == nil, Code: code, State: res.State, Version: res.Version, End: res.End}
	if err != nil {
		out.State = refusedIn(err)
	}
	if kind == "extend" && err != nil && in.NewEnd.IsZero() {
		in.Kind = "get" // the read before the extension was refused
	}
	w.run.hist.add(w.id, in, out, called, returned)
	if out.State == core.ReservationPreempted {
		// The client learns of a preemption only this way: a later read
		// answers it, or a refusal names it.
		w.run.preemptionsSeen.Add(1)
		if err != nil {
			return string(code) + " preempted", nil
		}
		return "preempted", nil
	}
	if err != nil {
		return string(code), nil
	}
	return "ok", nil
}
