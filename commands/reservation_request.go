package commands

// What a create asks for, and whether it is a request the placer can
// take: the request type and its validation, apart from the command that
// books it (reservation_create.go).

import (
	"errors"
	"time"

	"github.com/bettercompute/compute/core"
)

// CreateReservation asks for capacity in a pool or in any pool of a site,
// for the window [Start, End): GPUs atoms on one node (whole GPUs of a
// Model, MIG instances of a MIGProfile, or time-slice / MPS slots), plus
// vCPU, memory (MB) and disk (GB) on the same node. PriorityClass names
// its priority class (empty: the default class); Preemptible, when set, is
// what the caller expects of the class: false ("do not preempt me") refuses
// a preemptible class, true one that is not (docs/concepts/priority.md).
type CreateReservation struct {
	PoolID         string       `json:"poolId,omitempty"`
	SiteID         string       `json:"siteId,omitempty"`
	GPUs           int          `json:"gpus"`
	GPUModel       string       `json:"gpuModel,omitempty"`
	MIGProfile     string       `json:"migProfile,omitempty"`
	SlotKind       core.GPUMode `json:"slotKind,omitempty"`
	VCPU           int64        `json:"vcpu"`
	MemoryMB       int64        `json:"memoryMb"`
	DiskGB         int64        `json:"diskGb"`
	Start          time.Time    `json:"start"`
	End            time.Time    `json:"end"`
	Tolerations    []string     `json:"tolerations,omitempty"`
	PriorityClass  string       `json:"priorityClass,omitempty"` // "": the default class
	Preemptible    *bool        `json:"preemptible,omitempty"`   // nil: whatever the class is
	IdempotencyKey string       `json:"-"`
}

// microsecondsHint explains a refusal whose two times read the same: the
// times were sent apart by less than a microsecond, the resolution they
// are kept at, and truncated to the same one (a window of 1 ns is empty).
func microsecondsHint(a, b time.Time) string {
	if a.Equal(b) {
		return " (times are kept to the microsecond)"
	}
	return ""
}

// spec validates the request and turns it into the stored spec.
func (c CreateReservation) spec() (core.ReservationSpec, error) {
	bad := func(f string, a ...any) (core.ReservationSpec, error) {
		return core.ReservationSpec{}, core.Errorf(core.CodeInvalidArgument, f, a...)
	}
	if (c.PoolID == "") == (c.SiteID == "") {
		return bad("a reservation names exactly one of poolId and siteId")
	}
	if c.GPUs < 0 || c.VCPU < 0 || c.MemoryMB < 0 || c.DiskGB < 0 {
		return bad("requested amounts cannot be negative")
	}
	// Before "must ask for something": a caller who named a model, profile
	// or slot kind asked for GPUs and only left out how many, and is told so.
	if c.GPUs == 0 && (c.MIGProfile != "" || c.SlotKind != "" || c.GPUModel != "") {
		return bad("a GPU model, MIG profile or slot kind needs gpus > 0: how many of them")
	}
	if c.GPUs == 0 && c.VCPU == 0 && c.MemoryMB == 0 && c.DiskGB == 0 {
		return bad("a reservation must ask for something")
	}
	switch {
	case c.Start.IsZero():
		// JSON's zero time (0001-01-01T00:00:00Z) is what an absent start
		// decodes to: both are "no start".
		return bad("start is required (an RFC 3339 time)")
	case c.End.IsZero():
		return bad("end is required (an RFC 3339 time after start)")
	case !c.End.After(c.Start):
		return bad("end %s must be after start %s%s", storedTime(c.End), storedTime(c.Start), microsecondsHint(c.End, c.Start))
	}
	if c.GPUModel != "" {
		// The message names the field; ValidGPUModel's says why. Its
		// Error() would carry the code into the message as well.
		if err := core.ValidGPUModel(c.GPUModel); err != nil {
			var ce *core.Error
			if errors.As(err, &ce) {
				return core.ReservationSpec{}, core.Errorf(ce.Code, "gpuModel: %s", ce.Message)
			}
			return core.ReservationSpec{}, err
		}
	}
	g := core.GPURequest{Count: c.GPUs, Model: c.GPUModel, Kind: core.AtomGPU}
	switch {
	case c.MIGProfile != "" && c.SlotKind != "":
		return bad("ask for MIG instances or slots, not both")
	case c.MIGProfile != "":
		if _, err := core.ParseMIGProfile(c.MIGProfile); err != nil {
			return core.ReservationSpec{}, err
		}
		g.Kind, g.MIGProfile = core.AtomMIG, c.MIGProfile
	case c.SlotKind != "":
		if c.SlotKind != core.GPUTimeSlice && c.SlotKind != core.GPUMPS {
			return bad("slotKind must be time-slice or mps")
		}
		g.Kind, g.SlotKind = core.AtomSlot, c.SlotKind
	}
	if c.PriorityClass != "" && !core.ValidPriorityClassName(c.PriorityClass) {
		return bad("priority class %q does not exist: a class name is 1 to 63 lower-case letters, digits or '-'", c.PriorityClass)
	}
	return core.ReservationSpec{GPU: g, VCPU: c.VCPU, MemoryMB: c.MemoryMB, DiskGB: c.DiskGB,
		Tolerations: normaliseTaints(c.Tolerations)}, nil
}
