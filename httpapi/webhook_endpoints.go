package httpapi

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/webhook"
)

// WebhookRoutes serves /v1/webhook-endpoints: tenants register, change and
// remove endpoints, rotate secrets, replay missed events and read delivery
// attempts. Viewers may only read; another tenant's endpoint is NOT_FOUND;
// operators see every tenant's.
func WebhookRoutes(svc *webhook.Service) Routes {
	return func(r Router) {
		h := webhookHandlers{svc: svc}
		write := RequireRole(core.RoleOperator, core.RoleMember)
		r.V1.POST("/webhook-endpoints", h.create, write, queryParams())
		r.V1.GET("/webhook-endpoints", h.list, queryParams("cursor", "limit"))
		r.V1.GET("/webhook-endpoints/:id", h.get, queryParams())
		r.V1.PATCH("/webhook-endpoints/:id", h.patch, write, queryParams())
		r.V1.DELETE("/webhook-endpoints/:id", h.delete, write, queryParams())
		r.V1.POST("/webhook-endpoints/:id/rotate-secret", h.rotate, write, queryParams())
		r.V1.POST("/webhook-endpoints/:id/recover", h.recover, write, queryParams())
		r.V1.GET("/webhook-endpoints/:id/attempts", h.attempts, queryParams("cursor", "limit"))
	}
}

type webhookHandlers struct{ svc *webhook.Service }

// webhookEndpointJSON is an endpoint as the API shows it. Secret is set only
// in the responses to create and rotate-secret.
type webhookEndpointJSON struct {
	ID             string     `json:"id"`
	Tenant         string     `json:"tenant"`
	URL            string     `json:"url"`
	EventTypes     []string   `json:"eventTypes"`
	Description    string     `json:"description"`
	Enabled        bool       `json:"enabled"`
	DisabledReason string     `json:"disabledReason,omitempty"`
	FailingSince   *time.Time `json:"failingSince,omitempty"`
	// ConsecutiveFailures and CircuitOpenUntil show the circuit breaker.
	ConsecutiveFailures int32      `json:"consecutiveFailures,omitempty"`
	CircuitOpenUntil    *time.Time `json:"circuitOpenUntil,omitempty"`
	Version             int64      `json:"version"`
	CreatedAt           time.Time  `json:"createdAt"`
	UpdatedAt           time.Time  `json:"updatedAt"`
	Position            string     `json:"position,omitempty"`
	Secret              string     `json:"secret,omitempty"`
}

func webhookEndpointJSONOf(e webhook.Endpoint) webhookEndpointJSON {
	out := webhookEndpointJSON{
		ID: e.ID, Tenant: e.Tenant, URL: e.URL, EventTypes: e.EventTypes, Description: e.Description,
		Enabled: e.Enabled, DisabledReason: e.DisabledReason, FailingSince: e.FailingSince,
		Version: e.Version, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
		ConsecutiveFailures: e.ConsecutiveFailures, CircuitOpenUntil: e.CircuitOpenUntil,
	}
	if out.EventTypes == nil {
		out.EventTypes = []string{}
	}
	if !e.Position.IsZero() {
		out.Position = e.Position.String()
	}
	return out
}

// createWebhookEndpointRequest is the body of POST /v1/webhook-endpoints.
type createWebhookEndpointRequest struct {
	URL         string   `json:"url"`
	EventTypes  []string `json:"eventTypes"`
	Description string   `json:"description"`
	Tenant      string   `json:"tenant"` // operators only
}

// patchWebhookEndpointRequest is the body of PATCH; absent fields stay.
type patchWebhookEndpointRequest struct {
	URL         *string   `json:"url"`
	EventTypes  *[]string `json:"eventTypes"`
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
}

// recoverWebhookEndpointRequest is the body of POST .../recover. Since is
// read by parseTime, as every time the API takes, not by Go's JSON
// decoder, which takes offsets RFC 3339 does not (+05:60, +24:00) and
// refuses a lower-case t and z, which it allows.
type recoverWebhookEndpointRequest struct {
	Since string `json:"since"`
}

type recoverWebhookEndpointResponse struct {
	Scheduled     int        `json:"scheduled"`
	Truncated     bool       `json:"truncated"`
	RetainedSince *time.Time `json:"retainedSince,omitempty"`
}

type webhookAttemptJSON struct {
	ID              string    `json:"id"`
	DeliveryID      string    `json:"deliveryId"`
	EventID         string    `json:"eventId"`
	Attempt         int32     `json:"attempt"`
	Status          int32     `json:"status,omitempty"`
	LatencyMs       int32     `json:"latencyMs"`
	ResponseSnippet string    `json:"responseSnippet"`
	Error           string    `json:"error,omitempty"`
	At              time.Time `json:"at"`
}

func (h webhookHandlers) create(c echo.Context) error {
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	var req createWebhookEndpointRequest
	if err := bindUnversioned(c, &req); err != nil {
		return err
	}
	created, err := h.svc.CreateEndpoint(c.Request().Context(), ActorOf(c), webhook.CreateEndpoint{
		Tenant: req.Tenant, URL: req.URL, EventTypes: req.EventTypes, Description: req.Description,
		IdempotencyKey: key,
	})
	if err != nil {
		return err
	}
	return withSecret(c, http.StatusCreated, created)
}

// withSecret writes an endpoint with its one-time secret, uncacheable.
func withSecret(c echo.Context, status int, e webhook.EndpointWithSecret) error {
	resp := webhookEndpointJSONOf(e.Endpoint)
	resp.Secret = e.Secret
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(status, resp)
}

func (h webhookHandlers) get(c echo.Context) error {
	e, err := h.svc.GetEndpoint(c.Request().Context(), ActorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookEndpointJSONOf(e))
}

func (h webhookHandlers) list(c echo.Context) error {
	q, err := readKeyedListQuery(c, cursorWebhookEndpoints, webhook.MaxPageSize)
	if err != nil {
		return err
	}
	page, err := h.svc.ListEndpoints(c.Request().Context(), ActorOf(c), q.Cursor, q.Limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, mapPage(page.Items, wrapCursor(cursorWebhookEndpoints, page.NextCursor), webhookEndpointJSONOf))
}

func (h webhookHandlers) patch(c echo.Context) error {
	var req patchWebhookEndpointRequest
	if err := Bind(c, &req); err != nil {
		return err
	}
	ifVersion, err := ifMatch(c)
	if err != nil {
		return err
	}
	e, err := h.svc.PatchEndpoint(c.Request().Context(), ActorOf(c), c.Param("id"), webhook.PatchEndpoint{
		URL: req.URL, EventTypes: req.EventTypes, Description: req.Description, Enabled: req.Enabled, IfVersion: ifVersion,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookEndpointJSONOf(e))
}

func (h webhookHandlers) delete(c echo.Context) error {
	if err := unversionedNoBody(c); err != nil {
		return err
	}
	e, err := h.svc.DeleteEndpoint(c.Request().Context(), ActorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, webhookEndpointJSONOf(e))
}

func (h webhookHandlers) rotate(c echo.Context) error {
	// A retry under a key would rotate again, and a second rotation ends
	// the secret the consumer still checks with at once.
	if err := noIdempotencyKey(c); err != nil {
		return err
	}
	if err := unversionedNoBody(c); err != nil {
		return err
	}
	e, err := h.svc.RotateSecret(c.Request().Context(), ActorOf(c), c.Param("id"))
	if err != nil {
		return err
	}
	return withSecret(c, http.StatusOK, e)
}

func (h webhookHandlers) recover(c echo.Context) error {
	var req recoverWebhookEndpointRequest
	if err := bindUnversioned(c, &req); err != nil {
		return err
	}
	since, err := parseTime("since", req.Since)
	if err != nil {
		return err
	}
	res, err := h.svc.RecoverEndpoint(c.Request().Context(), ActorOf(c), c.Param("id"), since)
	var soon *webhook.RecoverTooSoonError
	if errors.As(err, &soon) {
		// RATE_LIMITED says when to come back, in whole seconds.
		c.Response().Header().Set("Retry-After", strconv.Itoa(max(int(math.Ceil(soon.Wait.Seconds())), 1)))
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, recoverWebhookEndpointResponse{Scheduled: res.Scheduled, Truncated: res.Truncated,
		RetainedSince: res.RetainedSince})
}

func (h webhookHandlers) attempts(c echo.Context) error {
	q, err := readKeyedListQuery(c, cursorWebhookAttempts, webhook.MaxPageSize)
	if err != nil {
		return err
	}
	page, err := h.svc.ListAttempts(c.Request().Context(), ActorOf(c), c.Param("id"), q.Cursor, q.Limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, mapPage(page.Items, wrapCursor(cursorWebhookAttempts, page.NextCursor), webhookAttemptJSONOf))
}

func webhookAttemptJSONOf(a webhook.Attempt) webhookAttemptJSON {
	return webhookAttemptJSON{
		ID: strconv.FormatInt(a.ID, 10), DeliveryID: a.DeliveryID, EventID: a.EventID, Attempt: a.Attempt,
		Status: a.Status, LatencyMs: a.LatencyMs, ResponseSnippet: a.ResponseSnippet, Error: a.Error, At: a.At,
	}
}
