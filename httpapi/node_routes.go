package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// NodeRoutes are the node lifecycle routes (operator only): join, which
// registers a node if it is new and issues its daemon credential; the
// node's credentials (list, revoke) and single-use join tokens (issue,
// revoke); and the
// operator's answers to a machine that may be gone: drain, undrain,
// release, retire. Liveness itself has no route: it is the gateways' and
// the liveness reconciler's business.
//
// Join also accepts a join token (bcj_…) instead of an operator token, so
// it is registered outside the /v1 group's Authenticate, behind joinAuth.
func NodeRoutes(h *commands.Handlers) Routes {
	if h == nil {
		panic("httpapi.NodeRoutes: nil handlers")
	}
	n := nodeHandlers{h: h}
	return func(r Router) {
		op := RequireRole(core.RoleOperator)
		r.Echo.POST("/v1/nodes/:id/join", n.join, joinAuth(r.gate, h), queryParams())
		r.V1.POST("/nodes/:id/join-tokens", n.createJoinToken, op, queryParams())
		r.V1.DELETE("/nodes/:id/join-tokens/:tid", n.revokeJoinToken, op, queryParams())
		r.V1.GET("/nodes/:id/credentials", n.listCredentials, op, queryParams())
		r.V1.DELETE("/nodes/:id/credentials/:cid", n.revokeCredential, op, queryParams())
		r.V1.POST("/nodes/:id/drain", n.lifecycle(h.DrainNode), op, queryParams())
		r.V1.POST("/nodes/:id/undrain", n.lifecycle(h.UndrainNode), op, queryParams())
		r.V1.POST("/nodes/:id/release", n.release, op, queryParams())
		r.V1.POST("/nodes/:id/retire", n.retire, op, queryParams())
	}
}

type nodeHandlers struct {
	h *commands.Handlers
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
	// It mints the daemon's credential: a retry under a key would mint
	// another and supersede the first.
	if err := noIdempotencyKey(c); err != nil {
		return err
	}
	var req joinNodeRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	ctx, actor, id := c.Request().Context(), ActorOf(c), c.Param("id")
	known, err := n.h.NodeExists(ctx, id)
	if err != nil {
		return err
	}
	if !known {
		reg := commands.RegisterNode{ID: id, PoolID: req.PoolID, VCPU: req.VCPU, MemoryMB: req.MemoryMB, DiskGB: req.DiskGB}
		for _, g := range req.GPUs {
			reg.GPUs = append(reg.GPUs, commands.GPUInventory{UUID: g.UUID, Model: g.Model, MemoryMB: g.MemoryMB,
				Layout: core.GPULayout{Mode: core.GPUExclusive}})
		}
		// A concurrent join of the same new node loses here with CONFLICT
		// and simply joins the node the other one registered. Any other
		// conflict (a GPU uuid another node has) is the answer.
		if _, err := n.h.RegisterNode(ctx, actor, reg); err != nil {
			if core.CodeOf(err) != core.CodeConflict {
				return err
			}
			if known, kerr := n.h.NodeExists(ctx, id); kerr != nil || !known {
				return err
			}
		}
	}
	var cred commands.NodeCredential
	if token, ok := c.Get(ctxKeyJoinToken).(string); ok {
		cred, err = n.h.JoinNodeWithToken(ctx, token, id)
	} else {
		cred, err = n.h.JoinNode(ctx, actor, id)
	}
	if err != nil {
		if core.CodeOf(err) == core.CodeUnauthenticated {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="compute", error="invalid_token"`)
		}
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusCreated, joinNodeResponse{NodeID: cred.NodeID, CredentialID: cred.ID, Token: cred.Token,
		Position: cred.Position.String()})
}

func (n nodeHandlers) lifecycle(run func(context.Context, core.Actor, commands.DrainNode) (commands.NodeLifecycleResult, error)) echo.HandlerFunc {
	return func(c echo.Context) error {
		id, v, err := targetNoBody(c)
		if err != nil {
			return err
		}
		res, err := run(c.Request().Context(), ActorOf(c), commands.DrainNode{NodeID: id, IfVersion: v})
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, lifecycleResponseOf(res))
	}
}

func (n nodeHandlers) release(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	if err := unversionedNoBody(c); err != nil {
		return err
	}
	res, err := n.h.ReleaseNode(c.Request().Context(), ActorOf(c), commands.ReleaseNode{NodeID: id})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, lifecycleResponseOf(res))
}

func (n nodeHandlers) retire(c echo.Context) error {
	id, v, err := targetNoBody(c)
	if err != nil {
		return err
	}
	res, err := n.h.RetireNode(c.Request().Context(), ActorOf(c), commands.RetireNode{NodeID: id, IfVersion: v})
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

// ctxKeyJoinToken is where joinAuth stores a join token that may join the
// node in the path; the join consumes it.
const ctxKeyJoinToken = "httpapi.joinToken"

// joinAuth authenticates POST /v1/nodes/{id}/join: a join token (bcj_…)
// valid now for the node in the path, checked here and consumed by the
// join in its transaction; any other bearer token goes through
// Authenticate and must be an operator's. A join token that is unknown,
// used, expired or for another node is the same 401.
func joinAuth(gate *authGate, h *commands.Handlers) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		asOperator := gate.middleware()(RequireRole(core.RoleOperator)(next))
		return func(c echo.Context) error {
			token, err := requestBearer(c.Request())
			if err != nil || !commands.IsJoinToken(token) {
				return asOperator(c)
			}
			// A guessed join token costs a lookup like a guessed API
			// token, and is throttled per client address the same way.
			now, client := time.Now(), gate.clients.Key(c.Request())
			if gate.fails != nil {
				if wait, throttled := gate.fails.Throttled(client, now); throttled {
					return rateLimited(c, wait, "too many failed authentications from this address: retry later")
				}
			}
			actor, err := h.CheckJoinToken(c.Request().Context(), token, c.Param("id"))
			if err != nil {
				if core.CodeOf(err) == core.CodeUnauthenticated {
					if gate.fails != nil {
						gate.fails.Failed(client, now)
					}
					c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="compute", error="invalid_token"`)
				}
				return err
			}
			c.Set(ctxKeyActor, actor)
			c.Set(ctxKeyJoinToken, token)
			return next(c)
		}
	}
}

// createJoinTokenRequest is the optional body of POST
// /v1/nodes/{id}/join-tokens.
type createJoinTokenRequest struct {
	TTLSeconds *int64 `json:"ttlSeconds"`
}

// joinTokenResponse carries the join token; the secret is shown once.
type joinTokenResponse struct {
	ID        string    `json:"id"`
	NodeID    string    `json:"nodeId"`
	Token     string    `json:"token"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func (n nodeHandlers) createJoinToken(c echo.Context) error {
	if err := noIfMatch(c); err != nil {
		return err
	}
	if err := noIdempotencyKey(c); err != nil {
		return err
	}
	var req createJoinTokenRequest
	if err := bindIfSent(c, &req); err != nil {
		return err
	}
	var ttl time.Duration
	if req.TTLSeconds != nil {
		secs := *req.TTLSeconds
		if secs < 1 || secs > int64(commands.MaxJoinTokenTTL/time.Second) {
			return core.Errorf(core.CodeInvalidArgument, "ttlSeconds must be between 1 and %d",
				int64(commands.MaxJoinTokenTTL/time.Second))
		}
		ttl = time.Duration(secs) * time.Second
	}
	jt, err := n.h.CreateJoinToken(c.Request().Context(), ActorOf(c), c.Param("id"), ttl)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusCreated, joinTokenResponse{ID: jt.ID, NodeID: jt.NodeID, Token: jt.Token, ExpiresAt: jt.ExpiresAt})
}

func (n nodeHandlers) revokeJoinToken(c echo.Context) error {
	if err := unversionedNoBody(c); err != nil {
		return err
	}
	if err := n.h.RevokeJoinToken(c.Request().Context(), ActorOf(c), c.Param("id"), c.Param("tid")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// credentialsResponse lists a node's credentials, never their secrets.
type credentialsResponse struct {
	Items []commands.NodeCredentialInfo `json:"items"`
}

func (n nodeHandlers) listCredentials(c echo.Context) error {
	items, err := n.h.ListNodeCredentials(c.Request().Context(), ActorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, credentialsResponse{Items: items})
}

func (n nodeHandlers) revokeCredential(c echo.Context) error {
	if err := unversionedNoBody(c); err != nil {
		return err
	}
	if err := n.h.RevokeNodeCredential(c.Request().Context(), ActorOf(c), c.Param("id"), c.Param("cid")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
