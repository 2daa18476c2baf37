package webhook

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// ReasonManual is the disabled_reason of an endpoint a user disabled.
const ReasonManual = "manual"

// PatchEndpoint is the input of Service.PatchEndpoint. Nil fields are left
// as they are.
type PatchEndpoint struct {
	URL         *string
	EventTypes  *[]string
	Description *string
	// Enabled false disables; true re-enables and clears the failure state,
	// so the five-day clock starts afresh. Events that arrived while the
	// endpoint was disabled are not sent: use RecoverEndpoint for those.
	Enabled *bool
	// IfVersion, when non-zero, makes the patch apply only to that version
	// (CONFLICT otherwise).
	IfVersion int64
}

// PatchEndpoint changes an endpoint's URL, filter, description or enabled
// flag, appending webhook_endpoint.updated.
func (s *Service) PatchEndpoint(ctx context.Context, actor core.Actor, id string, in PatchEndpoint) (Endpoint, error) {
	if err := requireWriter(actor); err != nil {
		return Endpoint{}, err
	}
	var out Endpoint
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		cur, err := visibleEndpoint(ctx, q, actor, id, true)
		if err != nil {
			return err
		}
		if in.IfVersion != 0 && in.IfVersion != cur.Version {
			return core.Errorf(core.CodeConflict, "webhook endpoint %s is at version %d, not %d", id, cur.Version, in.IfVersion)
		}
		p := db.WebhookEndpointUpdateParams{
			ID: id, Version: cur.Version, Url: cur.Url, EventTypes: cur.EventTypes,
			Description: cur.Description, Enabled: cur.Enabled, DisabledReason: cur.DisabledReason,
		}
		if in.URL != nil {
			if err := s.validateURL(*in.URL); err != nil {
				return err
			}
			p.Url = *in.URL
			p.ResetBreaker = p.Url != cur.Url // a new receiver gets a fresh chance
		}
		if in.EventTypes != nil {
			if p.EventTypes, err = normalizeEventTypes(*in.EventTypes); err != nil {
				return err
			}
		}
		if in.Description != nil {
			if err := validateDescription(*in.Description); err != nil {
				return err
			}
			p.Description = *in.Description
		}
		if in.Enabled != nil && *in.Enabled != cur.Enabled {
			p.Enabled = *in.Enabled
			if !p.Enabled {
				reason := ReasonManual
				p.DisabledReason = &reason
			} else {
				p.ResetBreaker = true
			}
		}
		row, err := q.WebhookEndpointUpdate(ctx, p)
		if errors.Is(err, pgx.ErrNoRows) {
			return core.Errorf(core.CodeConflict, "webhook endpoint %s changed concurrently", id)
		}
		if err != nil {
			return db.Translate(err, "webhook endpoint")
		}
		pos, err := appendEndpointEvent(ctx, q, EventEndpointUpdated, row, nil)
		out = endpointOf(row)
		out.Position = pos
		return err
	})
	if err != nil {
		return Endpoint{}, fmt.Errorf("patch webhook endpoint %s: %w", id, err)
	}
	return out, nil
}

// RotateSecret gives the endpoint a new secret, returned only here. The old
// secret keeps signing beside it for Config.SecretOverlap, so consumers
// can switch without rejecting a single delivery.
func (s *Service) RotateSecret(ctx context.Context, actor core.Actor, id string) (EndpointWithSecret, error) {
	if err := requireWriter(actor); err != nil {
		return EndpointWithSecret{}, err
	}
	secret := NewSecret()
	var out EndpointWithSecret
	err := db.InTx(ctx, s.pool, func(tx pgx.Tx) error {
		q := db.New(tx)
		if _, err := visibleEndpoint(ctx, q, actor, id, true); err != nil {
			return err
		}
		row, err := q.WebhookEndpointRotateSecret(ctx, db.WebhookEndpointRotateSecretParams{
			ID: id, Secret: secret, OverlapSeconds: s.cfg.SecretOverlap.Seconds(),
		})
		if err != nil {
			return db.Translate(err, "webhook endpoint")
		}
		pos, err := appendEndpointEvent(ctx, q, EventEndpointSecretRotated, row, nil)
		out = EndpointWithSecret{Endpoint: endpointOf(row), Secret: secret}
		out.Position = pos
		return err
	})
	if err != nil {
		return EndpointWithSecret{}, fmt.Errorf("rotate secret of webhook endpoint %s: %w", id, err)
	}
	return out, nil
}
