package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// NodeJobRoutes are the jobs sent to node daemons: POST /v1/commands
// (commands.run, member or operator, Idempotency-Key required) and GET
// /v1/commands/{id}. A tenant may command only a node where it holds a
// booked or active reservation; any other node answers 404, the same as a
// node that does not exist, so tenants learn nothing about the fleet. wipe
// and deploy are operator-only (403). Another tenant's command is 404.
func NodeJobRoutes(h *commands.Handlers) Routes {
	if h == nil {
		panic("httpapi.NodeJobRoutes: nil handlers")
	}
	ch := commandHandlers{h: h}
	return func(r Router) {
		r.V1.POST("/commands", ch.run, RequireRole(core.RoleOperator, core.RoleMember), queryParams())
		r.V1.GET("/commands/:id", ch.get, queryParams())
	}
}

type commandHandlers struct {
	h *commands.Handlers
}

// runCommandRequest is the body of POST /v1/commands.
type runCommandRequest struct {
	NodeID        string `json:"nodeId"`
	AllocationID  string `json:"allocationId"`
	Kind          string `json:"kind"`
	RetrySafe     bool   `json:"retrySafe"`
	MinGeneration int64  `json:"minGeneration"`
	Payload       struct {
		Script         string `json:"script"`
		Image          string `json:"image"`
		TimeoutSeconds int    `json:"timeoutSeconds"`
	} `json:"payload"`
}

// commandResponse is a command and, after a write, the position of its
// event for read-your-writes ("" when a repeated key returned it).
type commandResponse struct {
	core.NodeCommand
	Position string `json:"position,omitempty"`
}

func (ch commandHandlers) run(c echo.Context) error {
	var req runCommandRequest
	key, err := bindCreate(c, &req)
	if err != nil {
		return err
	}
	res, err := ch.h.RunNodeCommand(c.Request().Context(), ActorOf(c), commands.RunNodeCommand{
		NodeID: req.NodeID, AllocationID: req.AllocationID, IdempotencyKey: key, Kind: req.Kind,
		RetrySafe: req.RetrySafe, MinGeneration: req.MinGeneration,
		Payload: core.NodeCommandPayload{Script: req.Payload.Script, Image: req.Payload.Image,
			TimeoutSeconds: req.Payload.TimeoutSeconds},
	})
	if err != nil {
		return err
	}
	out := commandResponse{NodeCommand: res.Command}
	if !res.Position.IsZero() {
		out.Position = res.Position.String()
	}
	// A repeat of the key is also 201, with the command as it is now.
	return c.JSON(http.StatusCreated, out)
}

func (ch commandHandlers) get(c echo.Context) error {
	id, err := param(c, "id")
	if err != nil {
		return err
	}
	cmd, err := ch.h.GetNodeCommand(c.Request().Context(), ActorOf(c), id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, commandResponse{NodeCommand: cmd})
}
