package webhook_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/webhook"
)

// A patch that changes nothing is a no-op: the same version, no
// webhook_endpoint.updated, the endpoint as it is and no position. That
// holds for an empty patch, for fields given their current values (event
// types in another order, with a duplicate: normalised first) and for
// disabling a disabled endpoint, whose reason stays. If-Match still
// applies, and a real change after them is version+1 with one event.
func TestPatchThatChangesNothingIsANoOp(t *testing.T) {
	t.Parallel()
	f := setup(t, webhook.Config{})
	ctx := context.Background()
	ep := f.createEndpoint(t, acmeMember, "https://x.example/in", "reservation.released", "instance.failed")
	url, desc := ep.URL, ep.Description
	types := []string{"reservation.released", "instance.failed", "reservation.released"}
	on, off := true, false

	for name, p := range map[string]webhook.PatchEndpoint{
		"empty":        {},
		"same values":  {URL: &url, EventTypes: &types, Description: &desc, Enabled: &on},
		"same version": {IfVersion: ep.Version, Description: &desc},
	} {
		got, err := f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, p)
		require.NoError(t, err, name)
		require.Equal(t, ep.Version, got.Version, name)
		require.True(t, ep.UpdatedAt.Equal(got.UpdatedAt), "%s: updatedAt stays", name)
		require.True(t, got.Position.IsZero(), "%s: no event, no position", name)
		require.Equal(t, []string{"instance.failed", "reservation.released"}, got.EventTypes, name)
	}
	_, err := f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{IfVersion: ep.Version + 1})
	require.Equal(t, core.CodeConflict, core.CodeOf(err), "If-Match is checked before the no-op")

	disabled, err := f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{Enabled: &off})
	require.NoError(t, err)
	require.Equal(t, ep.Version+1, disabled.Version)
	require.False(t, disabled.Position.IsZero())
	again, err := f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{Enabled: &off})
	require.NoError(t, err)
	require.Equal(t, disabled.Version, again.Version)
	require.Equal(t, webhook.ReasonManual, again.DisabledReason)
	require.True(t, again.Position.IsZero())

	newDesc := "prod"
	changed, err := f.svc.PatchEndpoint(ctx, acmeMember, ep.ID, webhook.PatchEndpoint{Description: &newDesc})
	require.NoError(t, err)
	require.Equal(t, disabled.Version+1, changed.Version)
	require.Equal(t, []int64{disabled.Version, changed.Version}, updatedEventVersions(t, f, ep.ID, changed.Version),
		"one event per real change, none for the no-ops")
}

// updatedEventVersions is the version of every webhook_endpoint.updated
// about the endpoint, read once the one at version last is visible (an
// event committed before it is visible then too).
func updatedEventVersions(t *testing.T, f *fixture, endpointID string, last int64) []int64 {
	t.Helper()
	var versions []int64
	require.Eventually(t, func() bool {
		events, err := outbox.ReadAfter(context.Background(), f.pg.Q, outbox.Position{}, 1000)
		require.NoError(t, err)
		versions = versions[:0]
		for _, e := range events {
			if e.Type != webhook.EventEndpointUpdated || e.Subject != webhook.EndpointSubject(endpointID) {
				continue
			}
			var data struct {
				Version int64 `json:"version"`
			}
			require.NoError(t, json.Unmarshal(e.Data, &data))
			versions = append(versions, data.Version)
		}
		return len(versions) > 0 && versions[len(versions)-1] == last
	}, 10*time.Second, 5*time.Millisecond, "webhook_endpoint.updated at version %d", last)
	return versions
}
