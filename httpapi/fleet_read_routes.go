package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/queries"
)

// FleetReadRoutes are the reads of the fleet's configuration: sites, pools
// and priority classes, listed and one by one. They hold no tenant's data
// and every role may read them (a reservation names the pool or site and
// the priority class it wants); nodes, capacity and device holders stay
// operator reads (ReadRoutes). They are
// answered from the configuration tables themselves, always current, so
// they take no minPosition. Lists take ?cursor=&limit= and answer a Page.
func FleetReadRoutes(q *queries.Service) Routes {
	return func(r Router) {
		h := fleetReadHandlers{q: q}
		r.V1.GET("/sites", h.listSites, queryParams("cursor", "limit"))
		r.V1.GET("/sites/:id", h.getSite, queryParams())
		r.V1.GET("/pools", h.listPools, queryParams("cursor", "limit", "site"))
		r.V1.GET("/pools/:id", h.getPool, queryParams())
		r.V1.GET("/priority-classes", h.listPriorityClasses, queryParams("cursor", "limit"))
		r.V1.GET("/priority-classes/:name", h.getPriorityClass, queryParams())
	}
}

type fleetReadHandlers struct {
	q *queries.Service
}

func (h fleetReadHandlers) listSites(c echo.Context) error {
	l, err := readListQuery(c)
	if err != nil {
		return err
	}
	items, next, err := h.q.ListSites(c.Request().Context(), ActorOf(c), queries.ListSites{Cursor: l.Cursor, Limit: l.Limit})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(items, next))
}

func (h fleetReadHandlers) getSite(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	s, err := h.q.GetSite(c.Request().Context(), ActorOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s)
}

func (h fleetReadHandlers) listPools(c echo.Context) error {
	l, err := readListQuery(c)
	if err != nil {
		return err
	}
	items, next, err := h.q.ListPools(c.Request().Context(), ActorOf(c), queries.ListPools{
		SiteID: c.QueryParam("site"), Cursor: l.Cursor, Limit: l.Limit})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(items, next))
}

func (h fleetReadHandlers) getPool(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	p, err := h.q.GetPool(c.Request().Context(), ActorOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (h fleetReadHandlers) listPriorityClasses(c echo.Context) error {
	l, err := readListQuery(c)
	if err != nil {
		return err
	}
	items, next, err := h.q.ListPriorityClasses(c.Request().Context(), ActorOf(c),
		queries.ListPriorityClasses{Cursor: l.Cursor, Limit: l.Limit})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(items, next))
}

func (h fleetReadHandlers) getPriorityClass(c echo.Context) error {
	name, err := param(c, "name")
	if err != nil {
		return err
	}
	p, err := h.q.GetPriorityClass(c.Request().Context(), ActorOf(c), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}
