package httpapi

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// TenantSuspensionNoter is implemented by authenticators that can be told
// of suspends and resumes this process committed (authn.Authenticator): the
// suspended tenant's tokens are refused by this process at once, and its
// event streams here end, not once the authz feed brings the change.
type TenantSuspensionNoter interface {
	Suspended(tokenIDs []string)
	Resumed(tokenIDs []string)
}

// tenantSuspensionRoutes are the operator's suspend and resume of a tenant
// (docs/concepts/tenant-suspension.md). GET /v1/tenants/{tenant} shows the
// suspension.
func tenantSuspensionRoutes(r Router, h *commands.Handlers) {
	s := tenantSuspensionHandlers{h: h}
	s.noter, _ = r.Deps.Auth.(TenantSuspensionNoter)
	op := RequireRole(core.RoleOperator)
	r.V1.POST("/tenants/:tenant/suspend", s.suspend, op, queryParams())
	r.V1.POST("/tenants/:tenant/resume", s.resume, op, queryParams())
}

type tenantSuspensionHandlers struct {
	h     *commands.Handlers
	noter TenantSuspensionNoter // nil: the authenticator learns through its feed only
}

// suspendTenantRequest is the body of POST /v1/tenants/{tenant}/suspend.
type suspendTenantRequest struct {
	Reason              *string `json:"reason"`
	ReleaseReservations bool    `json:"releaseReservations"`
}

// tenantSuspensionResponse is a tenant's suspension after a suspend or a
// resume.
type tenantSuspensionResponse struct {
	Tenant      string     `json:"tenant"`
	Suspended   bool       `json:"suspended"`
	Reason      string     `json:"reason,omitempty"`
	SuspendedAt *time.Time `json:"suspendedAt,omitempty"`
	Version     int64      `json:"version"`
	// Released are the reservations this suspend released or cancelled.
	Released []string `json:"releasedReservations"`
	Position string   `json:"position"`
}

func tenantSuspensionResponseOf(res commands.TenantSuspensionResult) tenantSuspensionResponse {
	out := tenantSuspensionResponse{Tenant: res.Tenant, Suspended: res.Suspended, Reason: res.Reason,
		Version: res.Version, Released: res.Released, Position: res.Position.String()}
	if res.SuspendedAt != nil {
		at := res.SuspendedAt.UTC()
		out.SuspendedAt = &at
	}
	if out.Released == nil {
		out.Released = []string{}
	}
	return out
}

// suspend suspends a tenant. A repeat answers the suspension as it is (200,
// a zero position): like a PUT it takes no Idempotency-Key and no If-Match.
func (s tenantSuspensionHandlers) suspend(c echo.Context) error {
	tenant, err := param(c, "tenant")
	if err != nil {
		return err
	}
	var req suspendTenantRequest
	if err := bindUnversioned(c, &req); err != nil {
		return err
	}
	if req.Reason == nil {
		return core.Errorf(core.CodeInvalidArgument, "field \"reason\" is required")
	}
	res, err := s.h.SuspendTenant(c.Request().Context(), ActorOf(c), commands.SuspendTenant{
		Tenant: tenant, Reason: *req.Reason, ReleaseReservations: req.ReleaseReservations})
	if len(res.TokenIDs) > 0 && s.noter != nil {
		// Committed (even when ending its reservations failed after):
		// this process refuses the tenant's tokens from this answer on.
		s.noter.Suspended(res.TokenIDs)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tenantSuspensionResponseOf(res))
}

// resume lifts a tenant's suspension; a tenant not suspended answers as it
// is, with a zero position.
func (s tenantSuspensionHandlers) resume(c echo.Context) error {
	tenant, err := param(c, "tenant")
	if err != nil {
		return err
	}
	if err := unversionedNoBody(c); err != nil {
		return err
	}
	res, err := s.h.ResumeTenant(c.Request().Context(), ActorOf(c), commands.ResumeTenant{Tenant: tenant})
	if err != nil {
		return err
	}
	if s.noter != nil {
		s.noter.Resumed(res.TokenIDs)
	}
	return c.JSON(http.StatusOK, tenantSuspensionResponseOf(res))
}
