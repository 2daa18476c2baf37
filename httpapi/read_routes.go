package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/queries"
)

// ReadRoutes are the read side's routes, answered from the read models by
// q: reservations (tenant-scoped; operators see all), nodes, pool capacity
// and device holders (operators), and usage windows (tenant-scoped). Every
// route takes ?minPosition=<position a command returned> for
// read-your-writes; lists take ?cursor=&limit= and return
// {"items": [...], "nextCursor": "..."}.
func ReadRoutes(q *queries.Service) Routes {
	return func(r Router) {
		h := readHandlers{q: q}
		op := RequireRole(core.RoleOperator)
		r.V1.GET("/reservations", h.listReservations)
		r.V1.GET("/reservations/:id", h.getReservation)
		r.V1.GET("/nodes", h.listNodes, op)
		r.V1.GET("/nodes/:id", h.getNode, op)
		r.V1.GET("/pools/:id/capacity", h.poolCapacity, op)
		r.V1.GET("/devices/:id/holders", h.deviceHolders, op)
		r.V1.GET("/usage-windows", h.listUsageWindows)
	}
}

type readHandlers struct {
	q *queries.Service
}

// minPosition parses ?minPosition=; absent is the zero position (no wait).
func minPosition(c echo.Context) (outbox.Position, error) {
	p, err := outbox.ParsePosition(c.QueryParam("minPosition"))
	if err != nil {
		return outbox.Position{}, core.Errorf(core.CodeInvalidArgument, "minPosition is not a position a command returned")
	}
	return p, nil
}

// limit parses ?limit=; absent is 0 (the default page size).
func limit(c echo.Context) (int, error) {
	s := c.QueryParam("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, core.Errorf(core.CodeInvalidArgument, "limit must be a positive integer")
	}
	return n, nil
}

func (h readHandlers) listReservations(c echo.Context) error {
	min, err := minPosition(c)
	if err != nil {
		return err
	}
	n, err := limit(c)
	if err != nil {
		return err
	}
	page, err := h.q.ListReservations(c.Request().Context(), ActorOf(c), queries.ListReservations{
		Cursor: c.QueryParam("cursor"), Limit: n, State: c.QueryParam("state"), Tenant: c.QueryParam("tenant"),
		MinPosition: min})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

func (h readHandlers) getReservation(c echo.Context) error {
	min, err := minPosition(c)
	if err != nil {
		return err
	}
	r, err := h.q.GetReservation(c.Request().Context(), ActorOf(c), c.Param("id"), min)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

func (h readHandlers) listNodes(c echo.Context) error {
	min, err := minPosition(c)
	if err != nil {
		return err
	}
	n, err := limit(c)
	if err != nil {
		return err
	}
	page, err := h.q.ListNodes(c.Request().Context(), ActorOf(c), queries.ListNodes{
		PoolID: c.QueryParam("pool"), Cursor: c.QueryParam("cursor"), Limit: n, MinPosition: min})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

func (h readHandlers) getNode(c echo.Context) error {
	min, err := minPosition(c)
	if err != nil {
		return err
	}
	n, err := h.q.GetNode(c.Request().Context(), ActorOf(c), c.Param("id"), min)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, n)
}

func (h readHandlers) poolCapacity(c echo.Context) error {
	min, err := minPosition(c)
	if err != nil {
		return err
	}
	p, err := h.q.PoolCapacity(c.Request().Context(), ActorOf(c), c.Param("id"), min)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// deviceHoldersResponse is the answer to "who held device X at time T".
type deviceHoldersResponse struct {
	DeviceID string           `json:"deviceId"`
	At       time.Time        `json:"at"`
	Holders  []queries.Holder `json:"holders"`
}

func (h readHandlers) deviceHolders(c echo.Context) error {
	min, err := minPosition(c)
	if err != nil {
		return err
	}
	at, err := time.Parse(time.RFC3339Nano, c.QueryParam("at"))
	if err != nil {
		return core.Errorf(core.CodeInvalidArgument, "at must be an RFC 3339 time, e.g. 2030-01-01T12:00:00Z")
	}
	holders, err := h.q.DeviceHolders(c.Request().Context(), ActorOf(c), c.Param("id"), at, min)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deviceHoldersResponse{DeviceID: c.Param("id"), At: at.UTC(), Holders: holders})
}

func (h readHandlers) listUsageWindows(c echo.Context) error {
	min, err := minPosition(c)
	if err != nil {
		return err
	}
	n, err := limit(c)
	if err != nil {
		return err
	}
	page, err := h.q.ListUsageWindows(c.Request().Context(), ActorOf(c), queries.ListUsageWindows{
		Cursor: c.QueryParam("cursor"), Limit: n, ReservationID: c.QueryParam("reservation"),
		Tenant: c.QueryParam("tenant"), MinPosition: min})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}
