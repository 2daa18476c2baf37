package webhook

import (
	"context"
	"fmt"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// ReasonManual is the disabled_reason of an endpoint a user disabled.
const ReasonManual = commands.WebhookReasonManual

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

// PatchEndpoint validates the patch and applies it
// (commands.UpdateWebhookEndpoint), appending webhook_endpoint.updated.
func (s *Service) PatchEndpoint(ctx context.Context, actor core.Actor, id string, in PatchEndpoint) (Endpoint, error) {
	if err := requireWriter(actor); err != nil {
		return Endpoint{}, err
	}
	cmd := commands.UpdateWebhookEndpoint{
		ID: id, URL: in.URL, Description: in.Description, Enabled: in.Enabled, IfVersion: in.IfVersion,
	}
	if in.URL != nil {
		if err := s.validateURL(*in.URL); err != nil {
			return Endpoint{}, fmt.Errorf("patch webhook endpoint %s: %w", id, err)
		}
	}
	if in.EventTypes != nil {
		types, err := normalizeEventTypes(*in.EventTypes)
		if err != nil {
			return Endpoint{}, fmt.Errorf("patch webhook endpoint %s: %w", id, err)
		}
		cmd.EventTypes = &types
	}
	if in.Description != nil {
		if err := validateDescription(*in.Description); err != nil {
			return Endpoint{}, fmt.Errorf("patch webhook endpoint %s: %w", id, err)
		}
	}
	res, err := s.cmds.UpdateWebhookEndpoint(ctx, actor, cmd)
	if err != nil {
		return Endpoint{}, err
	}
	return endpointOfResult(res), nil
}

// RotateSecret gives the endpoint a new secret, returned only here. The old
// secret keeps signing beside it for Config.SecretOverlap, so consumers
// can switch without rejecting a single delivery.
func (s *Service) RotateSecret(ctx context.Context, actor core.Actor, id string) (EndpointWithSecret, error) {
	if err := requireWriter(actor); err != nil {
		return EndpointWithSecret{}, err
	}
	secret := NewSecret()
	res, err := s.cmds.RotateWebhookEndpointSecret(ctx, actor, commands.RotateWebhookEndpointSecret{
		ID: id, Secret: secret, Overlap: s.cfg.SecretOverlap,
	})
	if err != nil {
		return EndpointWithSecret{}, err
	}
	return EndpointWithSecret{Endpoint: endpointOfResult(res), Secret: secret}, nil
}
