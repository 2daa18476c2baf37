package httpapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// fleetRoutes are the operator's write routes. RequireRole refuses other
// roles at the edge; the commands check again, so the rule holds for every
// entry point.
func fleetRoutes(r Router, h *commands.Handlers) {
	f := fleetHandlers{h: h}
	op := RequireRole(core.RoleOperator)
	r.V1.POST("/sites", f.createSite, op, queryParams())
	r.V1.PATCH("/sites/:id", f.updateSite, op, queryParams())
	r.V1.POST("/pools", f.createPool, op, queryParams())
	r.V1.POST("/nodes", f.registerNode, op, queryParams())
	r.V1.POST("/nodes/:id/cordon", f.cordon(h.CordonNode), op, queryParams())
	r.V1.POST("/nodes/:id/uncordon", f.cordon(h.UncordonNode), op, queryParams())
	r.V1.POST("/nodes/:id/taint", f.taint(h.TaintNode), op, queryParams())
	r.V1.POST("/nodes/:id/untaint", f.taint(h.UntaintNode), op, queryParams())
	r.V1.POST("/devices/:id/quarantine", f.quarantine(h.QuarantineDevice), op, queryParams())
	r.V1.POST("/devices/:id/unquarantine", f.quarantine(h.UnquarantineDevice), op, queryParams())
	r.V1.PUT("/devices/:id/health", f.setHealth, op, queryParams())
	r.V1.PUT("/gpus/:id/mode", f.setMode, op, queryParams())
	r.V1.PUT("/tenants/:tenant/quotas/:resource", f.setQuota, op, queryParams())
}

type fleetHandlers struct {
	h *commands.Handlers
}

// gpuLayoutJSON is how a GPU is shared: mode exclusive; mig with its
// instance profiles ("1g.10gb", …); time-slice or mps with a slot count.
type gpuLayoutJSON struct {
	Mode  string   `json:"mode"`
	MIG   []string `json:"mig,omitempty"`
	Slots int      `json:"slots,omitempty"`
}

func (l gpuLayoutJSON) layout() core.GPULayout {
	return core.GPULayout{Mode: core.GPUMode(l.Mode), MIG: l.MIG, Slots: l.Slots}
}

// gpuInventoryJSON is one GPU in a node's inventory. A GPU without a
// layout starts exclusive, the state a GPU is in out of the box.
type gpuInventoryJSON struct {
	UUID     string         `json:"uuid"`
	Model    string         `json:"model"`
	MemoryMB int64          `json:"memoryMb"`
	Layout   *gpuLayoutJSON `json:"layout"`
}

// registerNodeRequest is the body of POST /v1/nodes.
type registerNodeRequest struct {
	ID       string             `json:"id"`
	PoolID   string             `json:"poolId"`
	VCPU     int64              `json:"vcpu"`
	MemoryMB int64              `json:"memoryMb"`
	DiskGB   int64              `json:"diskGb"`
	Taints   []taintJSON        `json:"taints"`
	GPUs     []gpuInventoryJSON `json:"gpus"`
}

// nodeResponse is a node's scheduling state.
type nodeResponse struct {
	ID       string      `json:"id"`
	PoolID   string      `json:"poolId"`
	Cordoned bool        `json:"cordoned"`
	Taints   []taintJSON `json:"taints"`
	Version  int64       `json:"version"`
	Position string      `json:"position"`
}

func nodeResponseOf(n commands.NodeResult) nodeResponse {
	return nodeResponse{ID: n.ID, PoolID: n.PoolID, Cordoned: n.Cordoned, Taints: decodeTaints(n.Taints),
		Version: n.Version, Position: n.Position.String()}
}

func (f fleetHandlers) registerNode(c echo.Context) error {
	var req registerNodeRequest
	if err := bindUnversioned(c, &req); err != nil {
		return err
	}
	if err := requireFields("id", req.ID, "poolId", req.PoolID); err != nil {
		return err
	}
	if err := checkAmounts(amount{"vcpu", req.VCPU}, amount{"memoryMb", req.MemoryMB}, amount{"diskGb", req.DiskGB}); err != nil {
		return err
	}
	taints, err := encodeTaints("taints", req.Taints)
	if err != nil {
		return err
	}
	cmd := commands.RegisterNode{ID: req.ID, PoolID: req.PoolID, VCPU: req.VCPU, MemoryMB: req.MemoryMB,
		DiskGB: req.DiskGB, Taints: taints, GPUs: make([]commands.GPUInventory, 0, len(req.GPUs))}
	for _, g := range req.GPUs {
		if err := requireFields("gpus[].uuid", g.UUID, "gpus[].model", g.Model); err != nil {
			return err
		}
		if err := checkAmounts(amount{"gpus[].memoryMb", g.MemoryMB}); err != nil {
			return err
		}
		layout := core.GPULayout{Mode: core.GPUExclusive}
		if g.Layout != nil {
			if err := requireFields("gpus[].layout.mode", g.Layout.Mode); err != nil {
				return err
			}
			layout = g.Layout.layout()
		}
		cmd.GPUs = append(cmd.GPUs, commands.GPUInventory{UUID: g.UUID, Model: g.Model, MemoryMB: g.MemoryMB, Layout: layout})
	}
	res, err := f.h.RegisterNode(c.Request().Context(), ActorOf(c), cmd)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, nodeResponseOf(res))
}

// cordon serves cordon and uncordon, which take no body.
func (f fleetHandlers) cordon(run func(ctx context.Context, a core.Actor, cmd commands.CordonNode) (commands.NodeResult, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, version, err := targetNoBody(c)
		if err != nil {
			return err
		}
		res, err := run(c.Request().Context(), ActorOf(c), commands.CordonNode{NodeID: id, IfVersion: version})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, nodeResponseOf(res))
	}
}

// taint serves taint and untaint; the body names the taint.
func (f fleetHandlers) taint(run func(ctx context.Context, a core.Actor, cmd commands.TaintNode) (commands.NodeResult, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		var req taintJSON
		id, version, err := bindTarget(c, &req)
		if err != nil {
			return err
		}
		taint, err := req.encode("taint")
		if err != nil {
			return err
		}
		res, err := run(c.Request().Context(), ActorOf(c), commands.TaintNode{NodeID: id, Taint: taint, IfVersion: version})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, nodeResponseOf(res))
	}
}

// deviceResponse is a GPU's status.
type deviceResponse struct {
	ID          string `json:"id"`
	Mode        string `json:"mode"`
	Health      string `json:"health"`
	Quarantined bool   `json:"quarantined"`
	Version     int64  `json:"version"`
	Position    string `json:"position"`
}

func deviceResponseOf(d commands.DeviceResult) deviceResponse {
	return deviceResponse{ID: d.ID, Mode: string(d.Mode), Health: d.Health, Quarantined: d.Quarantined,
		Version: d.Version, Position: d.Position.String()}
}

// quarantine serves quarantine and unquarantine, which take no body.
func (f fleetHandlers) quarantine(run func(ctx context.Context, a core.Actor, cmd commands.QuarantineDevice) (commands.DeviceResult, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, version, err := targetNoBody(c)
		if err != nil {
			return err
		}
		res, err := run(c.Request().Context(), ActorOf(c), commands.QuarantineDevice{DeviceID: id, IfVersion: version})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, deviceResponseOf(res))
	}
}

// setHealthRequest is the body of PUT /v1/devices/{id}/health.
type setHealthRequest struct {
	Health string `json:"health"`
}

func (f fleetHandlers) setHealth(c echo.Context) error {
	var req setHealthRequest
	id, version, err := bindTarget(c, &req)
	if err != nil {
		return err
	}
	if req.Health != commands.HealthHealthy && req.Health != commands.HealthUnhealthy {
		return core.Errorf(core.CodeInvalidArgument, "field \"health\" must be %q or %q", commands.HealthHealthy, commands.HealthUnhealthy)
	}
	res, err := f.h.SetDeviceHealth(c.Request().Context(), ActorOf(c), commands.SetDeviceHealth{
		DeviceID: id, Healthy: req.Health == commands.HealthHealthy, IfVersion: version})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deviceResponseOf(res))
}

func (f fleetHandlers) setMode(c echo.Context) error {
	var req gpuLayoutJSON
	id, version, err := bindTarget(c, &req)
	if err != nil {
		return err
	}
	if err := requireFields("mode", req.Mode); err != nil {
		return err
	}
	res, err := f.h.SetGPUMode(c.Request().Context(), ActorOf(c), commands.SetGPUMode{GPUID: id, Layout: req.layout(), IfVersion: version})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, deviceResponseOf(res))
}

// setQuotaRequest is the body of PUT /v1/tenants/{tenant}/quotas/{resource}.
// Max is a pointer so that a missing max is told apart from max 0, which
// is legal and means "nothing".
type setQuotaRequest struct {
	Max *int64 `json:"max"`
}

// quotaResponse is a quota after the change.
type quotaResponse struct {
	Tenant   string `json:"tenant"`
	Resource string `json:"resource"`
	Used     int64  `json:"used"`
	Max      int64  `json:"max"`
	Version  int64  `json:"version"`
	Position string `json:"position"`
}

func (f fleetHandlers) setQuota(c echo.Context) error {
	tenant, err := param(c, "tenant")
	if err != nil {
		return err
	}
	resource, err := param(c, "resource")
	if err != nil {
		return err
	}
	// If-Match: the version the quota must be at (optimistic
	// concurrency); without it the last writer wins, as before.
	version, err := ifMatch(c)
	if err != nil {
		return err
	}
	var req setQuotaRequest
	if err := bindBody(c, &req); err != nil {
		return err
	}
	if req.Max == nil {
		return core.Errorf(core.CodeInvalidArgument, "field \"max\" is required")
	}
	if err := checkAmounts(amount{"max", *req.Max}); err != nil {
		return err
	}
	res, err := f.h.SetQuota(c.Request().Context(), ActorOf(c), commands.SetQuota{Tenant: tenant, Resource: resource, Max: *req.Max, IfVersion: version})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, quotaResponse{Tenant: res.Tenant, Resource: res.Resource, Used: res.Used, Max: res.Max,
		Version: res.Version, Position: res.Position.String()})
}
