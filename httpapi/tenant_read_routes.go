package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/queries"
)

// TenantReadRoutes are the reads of identity: tenants, a tenant's quotas
// (limit and use by resource), the priority classes it may use, its fair
// share with its decayed usage, and the list of API tokens (metadata,
// never a secret; GET /v1/tokens/{id} is tokenRoutes'). Operators read
// every tenant; anyone else reads its own tenant only, and another tenant
// is 404 exactly like one that does not exist. Like FleetReadRoutes they
// read the tables themselves and take no minPosition; lists answer a Page.
func TenantReadRoutes(q *queries.Service) Routes {
	return func(r Router) {
		h := tenantReadHandlers{q: q}
		r.V1.GET("/tenants", h.listTenants, queryParams("cursor", "limit"))
		r.V1.GET("/tenants/:tenant", h.getTenant, queryParams())
		r.V1.GET("/tenants/:tenant/quotas", h.listQuotas, queryParams("cursor", "limit"))
		r.V1.GET("/tenants/:tenant/priority-classes", h.getPriorityClasses, queryParams())
		r.V1.GET("/tenants/:tenant/fair-share", h.getFairShare, queryParams())
		r.V1.GET("/tokens", h.listTokens, queryParams("cursor", "limit", "tenant"))
	}
}

type tenantReadHandlers struct {
	q *queries.Service
}

func (h tenantReadHandlers) listTenants(c echo.Context) error {
	l, err := readListQuery(c)
	if err != nil {
		return err
	}
	items, next, err := h.q.ListTenants(c.Request().Context(), ActorOf(c), queries.ListTenants{Cursor: l.Cursor, Limit: l.Limit})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(items, next))
}

func (h tenantReadHandlers) getTenant(c echo.Context) error {
	tenant, err := param(c, "tenant")
	if err != nil {
		return err
	}
	t, err := h.q.GetTenant(c.Request().Context(), ActorOf(c), tenant)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, t)
}

func (h tenantReadHandlers) listQuotas(c echo.Context) error {
	tenant, err := param(c, "tenant")
	if err != nil {
		return err
	}
	l, err := readListQuery(c)
	if err != nil {
		return err
	}
	items, next, err := h.q.ListQuotas(c.Request().Context(), ActorOf(c), queries.ListQuotas{
		Tenant: tenant, Cursor: l.Cursor, Limit: l.Limit})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(items, next))
}

func (h tenantReadHandlers) listTokens(c echo.Context) error {
	l, err := readListQuery(c)
	if err != nil {
		return err
	}
	items, next, err := h.q.ListTokens(c.Request().Context(), ActorOf(c), queries.ListTokens{
		Tenant: c.QueryParam("tenant"), Cursor: l.Cursor, Limit: l.Limit})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, newPage(items, next))
}

func (h tenantReadHandlers) getPriorityClasses(c echo.Context) error {
	tenant, err := param(c, "tenant")
	if err != nil {
		return err
	}
	p, err := h.q.GetTenantPriorityClasses(c.Request().Context(), ActorOf(c), tenant)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (h tenantReadHandlers) getFairShare(c echo.Context) error {
	tenant, err := param(c, "tenant")
	if err != nil {
		return err
	}
	f, err := h.q.GetTenantFairShare(c.Request().Context(), ActorOf(c), tenant)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, f)
}
