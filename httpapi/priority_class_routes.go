package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// priorityClassRoutes are the operator's writes of priority classes
// (docs/concepts/priority.md): create a class, and replace the classes a
// tenant may use. Their reads are FleetReadRoutes' (the classes, any role)
// and TenantReadRoutes' (a tenant's allow-list).
func priorityClassRoutes(r Router, h *commands.Handlers) {
	p := priorityClassHandlers{h: h}
	op := RequireRole(core.RoleOperator)
	r.V1.POST("/priority-classes", p.create, op, queryParams())
	r.V1.PUT("/tenants/:tenant/priority-classes", p.setTenant, op, queryParams())
}

type priorityClassHandlers struct {
	h *commands.Handlers
}

// createPriorityClassRequest is the body of POST /v1/priority-classes.
// value is required; preemptible left out is false, graceSeconds left out
// is 30.
type createPriorityClassRequest struct {
	Name         string `json:"name"`
	Value        *int64 `json:"value"`
	Preemptible  bool   `json:"preemptible"`
	GraceSeconds *int64 `json:"graceSeconds"`
	Description  string `json:"description"`
	IsDefault    bool   `json:"isDefault"`
}

// priorityClassResponse is a priority class as written.
type priorityClassResponse struct {
	Name         string `json:"name"`
	Value        int32  `json:"value"`
	Preemptible  bool   `json:"preemptible"`
	GraceSeconds int32  `json:"graceSeconds"`
	Description  string `json:"description"`
	IsDefault    bool   `json:"isDefault"`
	Version      int64  `json:"version"`
	CreatedAt    string `json:"createdAt"`
	Position     string `json:"position"`
}

func (p priorityClassHandlers) create(c echo.Context) error {
	var req createPriorityClassRequest
	key, err := bindCreate(c, &req)
	if err != nil {
		return err
	}
	if err := requireFields("name", req.Name); err != nil {
		return err
	}
	if req.Value == nil {
		return core.Errorf(core.CodeInvalidArgument, "field \"value\" is required")
	}
	res, err := p.h.CreatePriorityClass(c.Request().Context(), ActorOf(c), commands.CreatePriorityClass{
		Name: req.Name, Value: *req.Value, Preemptible: req.Preemptible, GraceSeconds: req.GraceSeconds,
		Description: req.Description, IsDefault: req.IsDefault, IdempotencyKey: key})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, priorityClassResponse{Name: res.Name, Value: res.Value, Preemptible: res.Preemptible,
		GraceSeconds: res.GraceSeconds, Description: res.Description, IsDefault: res.IsDefault, Version: res.Version,
		CreatedAt: formatTime(res.CreatedAt), Position: res.Position.String()})
}

// setTenantPriorityClassesRequest is the body of PUT
// /v1/tenants/{tenant}/priority-classes: the whole new set of classes the
// tenant may use besides the default one. classes is required ([] clears
// the set); a pointer tells a missing field from an empty list.
type setTenantPriorityClassesRequest struct {
	Classes *[]string `json:"classes"`
}

// tenantPriorityClassesResponse is a tenant's allow-list after the change.
type tenantPriorityClassesResponse struct {
	Tenant       string   `json:"tenant"`
	Classes      []string `json:"classes"`
	DefaultClass string   `json:"defaultClass"`
	Allowed      []string `json:"allowed"`
	Version      int64    `json:"version"`
	Position     string   `json:"position"`
}

// setTenant replaces a tenant's allow-list. PUT states the whole set, so a
// repeat changes nothing: it takes no Idempotency-Key and, unlike the
// quota PUT, no If-Match.
func (p priorityClassHandlers) setTenant(c echo.Context) error {
	tenant, err := param(c, "tenant")
	if err != nil {
		return err
	}
	var req setTenantPriorityClassesRequest
	if err := bindUnversioned(c, &req); err != nil {
		return err
	}
	if req.Classes == nil {
		return core.Errorf(core.CodeInvalidArgument, "field \"classes\" is required")
	}
	res, err := p.h.SetTenantPriorityClasses(c.Request().Context(), ActorOf(c), commands.SetTenantPriorityClasses{
		Tenant: tenant, Classes: *req.Classes})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tenantPriorityClassesResponse{Tenant: res.Tenant, Classes: res.Classes,
		DefaultClass: res.DefaultClass, Allowed: res.Allowed, Version: res.Version, Position: res.Position.String()})
}
