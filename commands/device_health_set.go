package commands

import (
	"context"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// SetDeviceHealth records a GPU's health as its node reports it. An
// unhealthy GPU leaves placement until it reports healthy again.
type SetDeviceHealth struct {
	DeviceID  string
	Healthy   bool
	IfVersion int64 // 0: no version check
}

// SetDeviceHealth flips a GPU's health (operator only; the node daemon's
// reports arrive through an operator-scoped gateway identity).
func (h *Handlers) SetDeviceHealth(ctx context.Context, actor core.Actor, cmd SetDeviceHealth) (DeviceResult, error) {
	want := HealthUnhealthy
	if cmd.Healthy {
		want = HealthHealthy
	}
	return h.changeDeviceStatus(ctx, actor, "devices.setHealth", cmd.DeviceID, cmd.IfVersion,
		func(g *db.DeviceListGPUForUpdateRow) (string, bool) {
			if g.Health == want {
				return "", false
			}
			g.Health = want
			return core.EventDeviceHealthChanged, true
		})
}
