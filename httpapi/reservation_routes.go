package httpapi

import (
	"context"
	"maps"
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// reservationRoutes are the tenant's write routes. Members and operators
// may write; viewers only read, so they are refused here. A reservation of
// another tenant is NOT_FOUND (the commands decide), never a hint that it
// exists.
func reservationRoutes(r Router, h *commands.Handlers) {
	rh := reservationHandlers{h: h}
	writer := RequireRole(core.RoleOperator, core.RoleMember)
	r.V1.POST("/reservations", rh.create, writer, queryParams())
	r.V1.POST("/reservations/:id/extend", rh.extend, writer, queryParams())
	r.V1.POST("/reservations/:id/release", rh.end(func(ctx context.Context, a core.Actor, id string, v int64) (commands.ReservationResult, error) {
		return h.ReleaseReservation(ctx, a, commands.ReleaseReservation{ReservationID: id, IfVersion: v})
	}), writer, queryParams())
	r.V1.POST("/reservations/:id/cancel", rh.end(func(ctx context.Context, a core.Actor, id string, v int64) (commands.ReservationResult, error) {
		return h.CancelReservation(ctx, a, commands.CancelReservation{ReservationID: id, IfVersion: v})
	}), writer, queryParams())
}

type reservationHandlers struct {
	h *commands.Handlers
}

// createReservationRequest is the body of POST /v1/reservations: where
// (exactly one of poolId and siteId), what (GPU atoms on one node, plus
// vCPU, memory in MB and disk in GB on that node), when ([start, end),
// RFC 3339) and its priority class (left out: the default class;
// preemptible, when sent, must match the class).
type createReservationRequest struct {
	PoolID        string      `json:"poolId"`
	SiteID        string      `json:"siteId"`
	GPUs          int         `json:"gpus"`
	GPUModel      string      `json:"gpuModel"`
	MIGProfile    string      `json:"migProfile"`
	SlotKind      string      `json:"slotKind"`
	VCPU          int64       `json:"vcpu"`
	MemoryMB      int64       `json:"memoryMb"`
	DiskGB        int64       `json:"diskGb"`
	Start         string      `json:"start"`
	End           string      `json:"end"`
	Tolerations   []taintJSON `json:"tolerations"`
	PriorityClass string      `json:"priorityClass"`
	Preemptible   *bool       `json:"preemptible"`
}

// extendReservationRequest is the body of POST /v1/reservations/{id}/extend.
type extendReservationRequest struct {
	End string `json:"end"`
}

// conditionJSON is an observation about a reservation; a pending one has
// Unschedulable, whose message says node by node why none could take it.
type conditionJSON struct {
	Type    string `json:"type"`
	Status  bool   `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// reservationResponse is a reservation as a command left it. The request
// fields come back under the names they were sent with; nodeId and
// deviceIds say where it was placed (once booked); charges is what it holds
// of the tenant's quotas; priority and preemptible are its class's value
// and flag, copied when it was created.
type reservationResponse struct {
	ID            string           `json:"id"`
	Tenant        string           `json:"tenant"`
	State         string           `json:"state"`
	PoolID        string           `json:"poolId,omitempty"`
	SiteID        string           `json:"siteId,omitempty"`
	GPUs          int              `json:"gpus"`
	GPUModel      string           `json:"gpuModel,omitempty"`
	MIGProfile    string           `json:"migProfile,omitempty"`
	SlotKind      string           `json:"slotKind,omitempty"`
	VCPU          int64            `json:"vcpu"`
	MemoryMB      int64            `json:"memoryMb"`
	DiskGB        int64            `json:"diskGb"`
	Tolerations   []taintJSON      `json:"tolerations"`
	Start         string           `json:"start"`
	End           string           `json:"end"`
	NodeID        string           `json:"nodeId,omitempty"`
	DeviceIDs     []string         `json:"deviceIds"`
	Charges       map[string]int64 `json:"charges"`
	Conditions    []conditionJSON  `json:"conditions"`
	PriorityClass string           `json:"priorityClass"`
	Priority      int32            `json:"priority"`
	Preemptible   bool             `json:"preemptible"`
	Version       int64            `json:"version"`
	Position      string           `json:"position"`
}

func reservationResponseOf(res commands.ReservationResult) reservationResponse {
	r := res.Reservation
	out := reservationResponse{
		ID: r.ID, Tenant: r.Tenant, State: string(r.State), PoolID: r.PoolID, SiteID: r.SiteID,
		GPUs: r.Spec.GPU.Count, GPUModel: r.Spec.GPU.Model, MIGProfile: r.Spec.GPU.MIGProfile,
		SlotKind: string(r.Spec.GPU.SlotKind), VCPU: r.Spec.VCPU, MemoryMB: r.Spec.MemoryMB, DiskGB: r.Spec.DiskGB,
		Tolerations: decodeTaints(r.Spec.Tolerations), Start: formatTime(r.Start), End: formatTime(r.End),
		NodeID: r.NodeID, DeviceIDs: slices.Clone(r.DeviceIDs), Charges: maps.Clone(r.Charges),
		Conditions: make([]conditionJSON, 0, len(r.Conditions)), Version: r.Version, Position: res.Position.String(),
		PriorityClass: r.PriorityClass, Priority: r.Priority, Preemptible: r.Preemptible,
	}
	if out.PriorityClass == "" {
		// An answer an Idempotency-Key stored before priority classes
		// existed: the reservation is of the class every one was then.
		out.PriorityClass = core.LegacyPriorityClass
	}
	if out.DeviceIDs == nil {
		out.DeviceIDs = []string{}
	}
	if out.Charges == nil {
		out.Charges = map[string]int64{}
	}
	for _, c := range r.Conditions {
		out.Conditions = append(out.Conditions, conditionJSON{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
	return out
}

func (rh reservationHandlers) create(c echo.Context) error {
	var req createReservationRequest
	key, err := bindCreate(c, &req)
	if err != nil {
		return err
	}
	if err := checkAmounts(amount{"gpus", int64(req.GPUs)}, amount{"vcpu", req.VCPU},
		amount{"memoryMb", req.MemoryMB}, amount{"diskGb", req.DiskGB}); err != nil {
		return err
	}
	start, err := parseTime("start", req.Start)
	if err != nil {
		return err
	}
	end, err := parseTime("end", req.End)
	if err != nil {
		return err
	}
	tolerations, err := encodeTaints("tolerations", req.Tolerations)
	if err != nil {
		return err
	}
	res, err := rh.h.CreateReservation(c.Request().Context(), ActorOf(c), commands.CreateReservation{
		PoolID: req.PoolID, SiteID: req.SiteID, GPUs: req.GPUs, GPUModel: req.GPUModel, MIGProfile: req.MIGProfile,
		SlotKind: core.GPUMode(req.SlotKind), VCPU: req.VCPU, MemoryMB: req.MemoryMB, DiskGB: req.DiskGB,
		Start: start, End: end, Tolerations: tolerations, PriorityClass: req.PriorityClass,
		Preemptible: req.Preemptible, IdempotencyKey: key,
	})
	if err != nil {
		return err
	}
	// A replay of the same key is also 201: the client sees exactly what
	// the first call returned.
	return c.JSON(http.StatusCreated, reservationResponseOf(res))
}

func (rh reservationHandlers) extend(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	version, err := ifMatch(c)
	if err != nil {
		return err
	}
	var req extendReservationRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	end, err := parseTime("end", req.End)
	if err != nil {
		return err
	}
	res, err := rh.h.ExtendReservation(c.Request().Context(), ActorOf(c), commands.ExtendReservation{
		ReservationID: id, NewEnd: end, IfVersion: version, IdempotencyKey: key})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, reservationResponseOf(res))
}

// endFunc runs release or cancel: both end a reservation, given its id and
// the version the client expects (0: any).
type endFunc func(ctx context.Context, a core.Actor, id string, ifVersion int64) (commands.ReservationResult, error)

// end serves release and cancel, which take no body. They take no
// Idempotency-Key: repeating one finds the reservation already ended and is
// refused by the state table with CONFLICT, changing nothing.
func (rh reservationHandlers) end(run endFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, version, err := targetNoBody(c)
		if err != nil {
			return err
		}
		res, err := run(c.Request().Context(), ActorOf(c), id, version)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, reservationResponseOf(res))
	}
}
