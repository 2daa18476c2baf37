package httpapi

import (
	"net/http"
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
		r.V1.GET("/reservations", h.listReservations, queryParams("cursor", "limit", "minPosition", "state", "tenant"))
		r.V1.GET("/reservations/:id", h.getReservation, queryParams("minPosition"))
		r.V1.GET("/nodes", h.listNodes, op, queryParams("pool", "cursor", "limit", "minPosition"))
		r.V1.GET("/nodes/:id", h.getNode, op, queryParams("minPosition"))
		r.V1.GET("/pools/:id/capacity", h.poolCapacity, op, queryParams("minPosition"))
		r.V1.GET("/devices/:id/holders", h.deviceHolders, op, queryParams("at", "minPosition"))
		r.V1.GET("/usage-windows", h.listUsageWindows, queryParams("cursor", "limit", "minPosition", "reservation", "tenant"))
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

// readList reads what every list of read models takes (?minPosition=,
// ?cursor=, ?limit=), runs list and answers its page.
func readList[T any](c echo.Context, list func(listQuery, outbox.Position) ([]T, string, error)) error {
	min, err := minPosition(c)
	if err != nil {
		return err
	}
	q, err := readListQuery(c)
	if err != nil {
		return err
	}
	items, next, err := list(q, min)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(items, next))
}

func (h readHandlers) listReservations(c echo.Context) error {
	state, err := queryEnum(c, "state", reservationStates())
	if err != nil {
		return err
	}
	return readList(c, func(q listQuery, min outbox.Position) ([]queries.Reservation, string, error) {
		return h.q.ListReservations(c.Request().Context(), ActorOf(c), queries.ListReservations{
			Cursor: q.Cursor, Limit: q.Limit, State: state, Tenant: c.QueryParam("tenant"),
			MinPosition: min})
	})
}

// reservationStates are the values of GET /v1/reservations?state=: every
// state of the reservation state table.
func reservationStates() []string {
	var out []string
	for _, s := range core.ReservationStateTable().States {
		out = append(out, string(s))
	}
	return out
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
	return readList(c, func(q listQuery, min outbox.Position) ([]queries.Node, string, error) {
		return h.q.ListNodes(c.Request().Context(), ActorOf(c), queries.ListNodes{
			PoolID: c.QueryParam("pool"), Cursor: q.Cursor, Limit: q.Limit, MinPosition: min})
	})
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
	at, err := parseTime("at", c.QueryParam("at"))
	if err != nil {
		return err
	}
	holders, err := h.q.DeviceHolders(c.Request().Context(), ActorOf(c), c.Param("id"), at, min)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deviceHoldersResponse{DeviceID: c.Param("id"), At: at.UTC(), Holders: holders})
}

func (h readHandlers) listUsageWindows(c echo.Context) error {
	return readList(c, func(q listQuery, min outbox.Position) ([]queries.UsageWindow, string, error) {
		return h.q.ListUsageWindows(c.Request().Context(), ActorOf(c), queries.ListUsageWindows{
			Cursor: q.Cursor, Limit: q.Limit, ReservationID: c.QueryParam("reservation"),
			Tenant: c.QueryParam("tenant"), MinPosition: min})
	})
}
