package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// InstanceRoutes are instances on reservations: POST /v1/instances
// (instances.create, Idempotency-Key optional), GET
// /v1/instances?reservationId= (a reservation's, oldest first, paged), GET
// /v1/instances/{id} and DELETE /v1/instances/{id} (instances.delete, which
// answers 202: the daemon stops the instance afterwards). Another tenant's
// instance or reservation is 404.
func InstanceRoutes(h *commands.Handlers) Routes {
	if h == nil {
		panic("httpapi.InstanceRoutes: nil handlers")
	}
	ih := instanceHandlers{h: h}
	return func(r Router) {
		writer := RequireRole(core.RoleOperator, core.RoleMember)
		r.V1.POST("/instances", ih.create, writer, queryParams())
		r.V1.GET("/instances", ih.list, queryParams("reservationId", "cursor", "limit"))
		r.V1.GET("/instances/:id", ih.get, queryParams())
		r.V1.DELETE("/instances/:id", ih.delete, writer, queryParams())
	}
}

type instanceHandlers struct {
	h *commands.Handlers
}

// createInstanceRequest is the body of POST /v1/instances.
type createInstanceRequest struct {
	ReservationID string `json:"reservationId"`
	Image         string `json:"image"`
	Command       string `json:"command"`
}

// instanceResponse is an instance and, after a write, the position of its
// last event.
type instanceResponse struct {
	core.Instance
	Position string `json:"position,omitempty"`
}

func instanceResponseOf(res commands.InstanceResult) instanceResponse {
	out := instanceResponse{Instance: res.Instance}
	if !res.Position.IsZero() {
		out.Position = res.Position.String()
	}
	return out
}

func (ih instanceHandlers) create(c echo.Context) error {
	var req createInstanceRequest
	key, err := bindCreate(c, &req)
	if err != nil {
		return err
	}
	res, err := ih.h.CreateInstance(c.Request().Context(), ActorOf(c), commands.CreateInstance{
		ReservationID: req.ReservationID, Spec: core.InstanceSpec{Image: req.Image, Command: req.Command},
		IdempotencyKey: key})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, instanceResponseOf(res))
}

func (ih instanceHandlers) list(c echo.Context) error {
	q, err := readKeyedListQuery(c, cursorInstances, commands.MaxInstancePage)
	if err != nil {
		return err
	}
	page, err := ih.h.ListInstances(c.Request().Context(), ActorOf(c), c.QueryParam("reservationId"), q.Cursor, q.Limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, mapPage(page.Items, wrapCursor(cursorInstances, page.NextAfter),
		func(i core.Instance) instanceResponse { return instanceResponse{Instance: i} }))
}

func (ih instanceHandlers) get(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	i, err := ih.h.GetInstance(c.Request().Context(), ActorOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, instanceResponse{Instance: i})
}

func (ih instanceHandlers) delete(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	if err := unversionedNoBody(c); err != nil {
		return err
	}
	res, err := ih.h.DeleteInstance(c.Request().Context(), ActorOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, instanceResponseOf(res))
}
