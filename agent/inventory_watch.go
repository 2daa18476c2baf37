package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/coder/websocket"

	"github.com/bettercompute/compute/wire"
)

// DefaultInventoryEvery is how often a connected daemon reads its GPUs
// again (Config.InventoryEvery).
const DefaultInventoryEvery = time.Minute

// machineGPUs is the node's GPUs as last read.
func (d *daemon) machineGPUs() []wire.InventoryGPU {
	d.gpusMu.Lock()
	defer d.gpusMu.Unlock()
	return slices.Clone(d.gpus)
}

// watchInventory reads the machine's GPUs every Config.InventoryEvery
// while the session on ws is open and reports a change at once, as a
// wire.NodeState of the machine only. A GPU that falls off the bus, or
// comes back, reached the control plane only at the daemon's next
// connect: meanwhile tenants were booked onto a GPU that was gone, and a
// repaired one stayed unbookable. Assignments of a GPU that is gone are
// refused from the moment it is read as gone (validateAssign), and the
// control plane, told, holds them instead of sending them (a missing GPU's
// bookings are kept). A read that fails changes nothing: it is logged, and
// the next one decides.
func (d *daemon) watchInventory(ctx context.Context, ws *websocket.Conn) {
	every := d.cfg.InventoryEvery
	if every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		gpus, err := inventoryGPUs(ctx, d.cfg.NodeID, d.cfg.FakeGPUs)
		if err != nil {
			d.log.Warn("GPUs not read again; the last inventory stands", "err", err)
			continue
		}
		d.gpusMu.Lock()
		changed := !reflect.DeepEqual(gpus, d.gpus)
		if changed {
			d.gpus = gpus
		}
		d.gpusMu.Unlock()
		if !changed {
			continue
		}
		d.log.Warn("the machine's GPUs changed: reporting them", "gpus", len(gpus))
		if err := d.sendMachine(ctx, ws); err != nil {
			d.log.Warn("GPU report", "err", err)
			return // the session is ending; the next one sends the whole inventory
		}
	}
}

// sendMachine sends the machine's part of the node's state: its GPUs,
// whether it refuses workloads, how it limits their disk and its
// configured scalars, with what it holds and runs null.
func (d *daemon) sendMachine(ctx context.Context, ws *websocket.Conn) error {
	st := wire.NodeState{ObservedGeneration: d.journal.observedGeneration(), GPUs: d.machineGPUs(),
		DiskLimit: d.sandbox.diskLimit, Scalars: d.cfg.Scalars}
	if err := d.sandbox.check(); err != nil {
		st.WorkloadsRefused = err.Error()
	}
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode GPU report: %w", err)
	}
	return send(ctx, ws, wire.Message{Type: wire.TypeInventory, JournalID: d.journal.id,
		ObservedGeneration: st.ObservedGeneration, Payload: b})
}
