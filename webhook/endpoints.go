package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/outbox"
)

// Endpoint is a webhook endpoint as the API shows it: never its secret.
type Endpoint struct {
	ID             string
	Tenant         string
	URL            string
	EventTypes     []string // empty: every event type
	Description    string
	Enabled        bool
	DisabledReason string // "gone", "failing" or "manual" while disabled
	FailingSince   *time.Time
	// ConsecutiveFailures counts failed attempts since the last success;
	// CircuitOpenUntil, when in the future, is when deliveries resume
	// after the breaker opened.
	ConsecutiveFailures int32
	CircuitOpenUntil    *time.Time
	Version             int64
	CreatedAt           time.Time
	UpdatedAt           time.Time
	// Position is the log position of the event the change appended, for
	// read-your-writes; zero on reads.
	Position outbox.Position
}

// EndpointWithSecret is returned by create and rotate: the only two places
// a secret is ever shown.
type EndpointWithSecret struct {
	Endpoint
	Secret string
}

// Page is one page of a cursor-paginated list. NextCursor is empty on the
// last page.
type Page[T any] struct {
	Items      []T
	NextCursor string
}

// CreateEndpoint is the input of Service.CreateEndpoint.
type CreateEndpoint struct {
	// Tenant owns the endpoint: only operators may set it; empty means
	// the actor's own tenant.
	Tenant      string
	URL         string
	EventTypes  []string
	Description string
	// IdempotencyKey makes a retry of the same request answer what the
	// first one did, its secret included (commands.CreateWebhookEndpoint).
	IdempotencyKey string
}

const (
	endpointIDPrefix     = "we_"
	endpointNotFoundText = "webhook endpoint %s not found"
	defaultPageSize      = 50
	maxPageSize          = MaxPageSize
)

// MaxPageSize is the largest page the webhook lists serve; the HTTP layer
// refuses a larger ?limit= as every list does.
const MaxPageSize = 200

func endpointOf(r db.WebhookEndpoint) Endpoint {
	e := Endpoint{
		ID: r.ID, Tenant: r.TenantID, URL: r.Url, EventTypes: r.EventTypes, Description: r.Description,
		Enabled: r.Enabled, FailingSince: r.FailingSince, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
		ConsecutiveFailures: r.ConsecutiveFailures, CircuitOpenUntil: r.BreakerOpenUntil,
	}
	if r.DisabledReason != nil {
		e.DisabledReason = *r.DisabledReason
	}
	return e
}

func requireWriter(actor core.Actor) error {
	if !actor.CanWrite() {
		return core.Errorf(core.CodePermissionDenied, "viewers may not change webhook endpoints")
	}
	return nil
}

// CreateEndpoint validates the input, generates the id and secret, and
// registers the endpoint (commands.CreateWebhookEndpoint). It returns it
// with its secret, which is shown only here.
func (s *Service) CreateEndpoint(ctx context.Context, actor core.Actor, in CreateEndpoint) (EndpointWithSecret, error) {
	if err := requireWriter(actor); err != nil {
		return EndpointWithSecret{}, err
	}
	tenant := actor.Tenant
	if in.Tenant != "" && in.Tenant != actor.Tenant {
		if !actor.IsOperator() {
			return EndpointWithSecret{}, core.Errorf(core.CodePermissionDenied, "only operators may create endpoints for another tenant")
		}
		tenant = in.Tenant
	}
	if err := s.validateURL(in.URL); err != nil {
		return EndpointWithSecret{}, err
	}
	types, err := normalizeEventTypes(in.EventTypes)
	if err != nil {
		return EndpointWithSecret{}, err
	}
	if err := validateDescription(in.Description); err != nil {
		return EndpointWithSecret{}, err
	}
	idBytes := make([]byte, 12)
	_, _ = rand.Read(idBytes)
	secret := NewSecret()
	res, err := s.cmds.CreateWebhookEndpoint(ctx, actor, commands.CreateWebhookEndpoint{
		ID: endpointIDPrefix + hex.EncodeToString(idBytes), Tenant: tenant, URL: in.URL,
		EventTypes: types, Description: in.Description, Secret: secret, MaxEndpoints: s.cfg.MaxEndpoints,
		IdempotencyKey: in.IdempotencyKey,
	})
	if err != nil {
		return EndpointWithSecret{}, err
	}
	return EndpointWithSecret{Endpoint: endpointOfResult(res.WebhookEndpointResult), Secret: res.Secret}, nil
}

// endpointOfResult is the endpoint a command wrote, with its event's position.
func endpointOfResult(res commands.WebhookEndpointResult) Endpoint {
	r := res.Endpoint
	return Endpoint{ID: r.ID, Tenant: r.Tenant, URL: r.URL, EventTypes: r.EventTypes, Description: r.Description,
		Enabled: r.Enabled, DisabledReason: r.DisabledReason, FailingSince: r.FailingSince, Version: r.Version,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, ConsecutiveFailures: r.ConsecutiveFailures,
		CircuitOpenUntil: r.BreakerOpenUntil, Position: res.Position}
}

// visibleEndpoint loads an endpoint the actor may see. Another tenant's
// endpoint is NOT_FOUND with the same message as a missing one, so its
// existence is never revealed.
func visibleEndpoint(ctx context.Context, q *db.Queries, actor core.Actor, id string, forUpdate bool) (db.WebhookEndpoint, error) {
	get := q.WebhookEndpointGet
	if forUpdate {
		get = q.WebhookEndpointGetForUpdate
	}
	row, err := get(ctx, id)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && !actor.Sees(row.TenantID)) {
		return db.WebhookEndpoint{}, core.Errorf(core.CodeNotFound, endpointNotFoundText, id)
	}
	if err != nil {
		return db.WebhookEndpoint{}, pg.Translate(err, "webhook endpoint")
	}
	return row, nil
}

// GetEndpoint returns one endpoint.
func (s *Service) GetEndpoint(ctx context.Context, actor core.Actor, id string) (Endpoint, error) {
	row, err := visibleEndpoint(ctx, db.New(s.pool), actor, id, false)
	if err != nil {
		return Endpoint{}, fmt.Errorf("get webhook endpoint %s: %w", id, err)
	}
	return endpointOf(row), nil
}

// ListEndpoints pages through the endpoints the actor sees (operators: all
// tenants) in id order. cursor is the NextCursor of the previous page.
func (s *Service) ListEndpoints(ctx context.Context, actor core.Actor, cursor string, limit int) (Page[Endpoint], error) {
	limit = pageSize(limit)
	p := db.WebhookEndpointListParams{AfterID: cursor, MaxRows: int32(limit + 1)}
	if !actor.IsOperator() {
		p.TenantID = &actor.Tenant
	}
	rows, err := db.New(s.pool).WebhookEndpointList(ctx, p)
	if err != nil {
		return Page[Endpoint]{}, fmt.Errorf("list webhook endpoints: %w", pg.Translate(err, "webhook endpoints"))
	}
	page := Page[Endpoint]{Items: make([]Endpoint, 0, min(len(rows), limit))}
	for i, r := range rows {
		if i == limit {
			page.NextCursor = rows[i-1].ID
			break
		}
		page.Items = append(page.Items, endpointOf(r))
	}
	return page, nil
}

// DeleteEndpoint removes an endpoint with its deliveries and attempts
// (commands.DeleteWebhookEndpoint); queued delivery items find nothing and
// complete.
func (s *Service) DeleteEndpoint(ctx context.Context, actor core.Actor, id string) (Endpoint, error) {
	if err := requireWriter(actor); err != nil {
		return Endpoint{}, err
	}
	res, err := s.cmds.DeleteWebhookEndpoint(ctx, actor, id)
	if err != nil {
		return Endpoint{}, err
	}
	return endpointOfResult(res), nil
}

func pageSize(limit int) int {
	if limit <= 0 {
		return defaultPageSize
	}
	return min(limit, maxPageSize)
}
