package httpapi

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/nodes"
)

// NodeRoutes are the node lifecycle routes (operator only): join, which
// registers a node if it is new and issues its daemon credential, and the
// operator's answers to a machine that may be gone: drain, undrain,
// release, retire. Liveness itself has no route: it is the gateways' and
// the liveness reconciler's business.
func NodeRoutes(h *commands.Handlers, s *nodes.Service) Routes {
	if h == nil || s == nil {
		panic("httpapi.NodeRoutes: nil handlers or node service")
	}
	n := nodeHandlers{h: h, s: s}
	return func(r Router) {
		op := RequireRole(core.RoleOperator)
		r.V1.POST("/nodes/:id/join", n.join, op)
		r.V1.POST("/nodes/:id/drain", n.lifecycle(h.DrainNode), op)
		r.V1.POST("/nodes/:id/undrain", n.lifecycle(h.UndrainNode), op)
		r.V1.POST("/nodes/:id/release", n.release, op)
		r.V1.POST("/nodes/:id/retire", n.retire, op)
	}
}

type nodeHandlers struct {
	h *commands.Handlers
	s *nodes.Service
}

// joinNodeRequest is the body of POST /v1/nodes/{id}/join: the inventory a
// new node is registered with (ignored, pool included, for a known node).
type joinNodeRequest struct {
	PoolID   string `json:"poolId"`
	VCPU     int64  `json:"vcpu"`
	MemoryMB int64  `json:"memoryMb"`
	DiskGB   int64  `json:"diskGb"`
	GPUs     []struct {
		UUID     string `json:"uuid"`
		Model    string `json:"model"`
		MemoryMB int64  `json:"memoryMb"`
	} `json:"gpus"`
}

// joinNodeResponse carries the node credential; the secret is shown once.
type joinNodeResponse struct {
	NodeID       string `json:"nodeId"`
	CredentialID string `json:"credentialId"`
	Token        string `json:"token"`
	Position     string `json:"position"`
}

func (n nodeHandlers) join(c echo.Context) error {
	if err := noIfMatch(c); err != nil {
		return err
	}
	var req joinNodeRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	ctx, actor, id := c.Request().Context(), ActorOf(c), c.Param("id")
	if _, err := db.New(n.h.Pool).NodeGet(ctx, id); err != nil {
		if core.CodeOf(db.Translate(err, "node")) != core.CodeNotFound {
			return db.Translate(err, "node "+id)
		}
		reg := commands.RegisterNode{ID: id, PoolID: req.PoolID, VCPU: req.VCPU, MemoryMB: req.MemoryMB, DiskGB: req.DiskGB}
		for _, g := range req.GPUs {
			reg.GPUs = append(reg.GPUs, commands.GPUInventory{UUID: g.UUID, Model: g.Model, MemoryMB: g.MemoryMB,
				Layout: core.GPULayout{Mode: core.GPUExclusive}})
		}
		// A concurrent join of the same new node loses here with CONFLICT
		// and simply joins the node the other one registered.
		if _, err := n.h.RegisterNode(ctx, actor, reg); err != nil && core.CodeOf(err) != core.CodeConflict {
			return err
		}
	}
	cred, err := n.s.Join(ctx, actor, id)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusCreated, joinNodeResponse{NodeID: cred.NodeID, CredentialID: cred.ID, Token: cred.Token,
		Position: cred.Position.String()})
}

func (n nodeHandlers) lifecycle(run func(context.Context, core.Actor, commands.DrainNode) (commands.NodeLifecycleResult, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		v, err := ifMatch(c)
		if err != nil {
			return err
		}
		res, err := run(c.Request().Context(), ActorOf(c), commands.DrainNode{NodeID: c.Param("id"), IfVersion: v})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, lifecycleResponseOf(res))
	}
}

func (n nodeHandlers) release(c echo.Context) error {
	if err := noIfMatch(c); err != nil {
		return err
	}
	res, err := n.h.ReleaseNode(c.Request().Context(), ActorOf(c), commands.ReleaseNode{NodeID: c.Param("id")})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, lifecycleResponseOf(res))
}

func (n nodeHandlers) retire(c echo.Context) error {
	v, err := ifMatch(c)
	if err != nil {
		return err
	}
	res, err := n.h.RetireNode(c.Request().Context(), ActorOf(c), commands.RetireNode{NodeID: c.Param("id"), IfVersion: v})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, lifecycleResponseOf(res))
}

// lifecycleResponse is a node after drain, undrain, release or retire.
type lifecycleResponse struct {
	ID                string   `json:"id"`
	State             string   `json:"state"`
	NoScheduleReasons []string `json:"noScheduleReasons"`
	Version           int64    `json:"version"`
	Position          string   `json:"position"`
	Released          []string `json:"released,omitempty"`
}

func lifecycleResponseOf(r commands.NodeLifecycleResult) lifecycleResponse {
	return lifecycleResponse{ID: r.ID, State: r.State, NoScheduleReasons: r.NoScheduleReasons, Version: r.Version,
		Position: r.Position.String(), Released: r.Released}
}
