package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// fairShareRoutes is the operator's write of a tenant's fair share of the
// waiting line (docs/concepts/fair-share.md). Its read, with the tenant's
// decayed usage, is TenantReadRoutes'.
func fairShareRoutes(r Router, h *commands.Handlers) {
	f := fairShareHandlers{h: h}
	r.V1.PUT("/tenants/:tenant/fair-share", f.set, RequireRole(core.RoleOperator), queryParams())
}

type fairShareHandlers struct {
	h *commands.Handlers
}

// setFairShareRequest is the body of PUT /v1/tenants/{tenant}/fair-share.
// share is required; a pointer tells a missing field from a zero.
type setFairShareRequest struct {
	Share *int64 `json:"share"`
}

// fairShareResponse is a tenant's share after the change.
type fairShareResponse struct {
	Tenant   string `json:"tenant"`
	Share    int32  `json:"share"`
	Version  int64  `json:"version"`
	Position string `json:"position"`
}

// set sets a tenant's share. PUT states the whole value, so a repeat
// changes nothing: like the quota PUT it takes no Idempotency-Key; unlike
// it (whose absolute max two writers may race), no If-Match.
func (f fairShareHandlers) set(c echo.Context) error {
	tenant, err := param(c, "tenant")
	if err != nil {
		return err
	}
	var req setFairShareRequest
	if err := bindUnversioned(c, &req); err != nil {
		return err
	}
	if req.Share == nil {
		return core.Errorf(core.CodeInvalidArgument, "field \"share\" is required")
	}
	res, err := f.h.SetTenantFairShare(c.Request().Context(), ActorOf(c), commands.SetTenantFairShare{Tenant: tenant, Share: *req.Share})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, fairShareResponse{Tenant: res.Tenant, Share: res.Share, Version: res.Version,
		Position: res.Position.String()})
}
