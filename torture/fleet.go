package torture

import (
	"context"
	"fmt"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// The actors of the run: an operator and two tenants that compete for one
// pool.
var (
	operator = core.Actor{Tenant: "ops", Identity: "torture@ops", Role: core.RoleOperator}
	tenants  = []core.Actor{
		{Tenant: "acme", Identity: "torture@acme", Role: core.RoleMember},
		{Tenant: "globex", Identity: "torture@globex", Role: core.RoleMember},
	}
)

const (
	site = "torture-site"
	pool = "torture-pool"
	// rushPool is the rushes' pool (rush.go): rushNodes nodes of rushGPUs
	// whole GPUs, which only the rushes book.
	rushPool = "torture-rush"
	// gatewayID is the gateway the torture's liveness flips pretend to be.
	gatewayID = "torture-gw"
)

// fleet is what the run seeded: node ids, GPU ids, and the nodes whose
// daemon sessions the run opens and closes (liveness flips).
type fleet struct {
	nodes      []string
	gpus       []string
	daemonized []string
	// layouts is each GPU's own layout, which mode changes return to.
	layouts map[string]core.GPULayout
}

// nodeSpec is one kind of node in the fleet.
type nodeSpec struct {
	count   int
	layouts []core.GPULayout
}

var exclusive = core.GPULayout{Mode: core.GPUExclusive}

// fleetSpec is a mixed fleet, sized with the operation mix (ops.go) so that
// capacity binds now and then but most creates book: whole GPUs for most
// requests, MIG instances, time-slice and MPS slots for the rest.
var fleetSpec = []nodeSpec{
	{count: 8, layouts: []core.GPULayout{exclusive, exclusive, exclusive, exclusive}},
	{count: 2, layouts: []core.GPULayout{
		{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}},
		{Mode: core.GPUMIG, MIG: []string{"1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"}}}},
	{count: 2, layouts: []core.GPULayout{{Mode: core.GPUTimeSlice, Slots: 4}, {Mode: core.GPUTimeSlice, Slots: 4}}},
	{count: 1, layouts: []core.GPULayout{{Mode: core.GPUMPS, Slots: 4}, exclusive}},
}

// The priority classes of the run (docs/concepts/priority.md): batch may be
// displaced by standard (the default class, 0) and prod, which never are.
// A create picks one (pickClass), so that standard and prod creates on a
// full pool preempt batch reservations.
const (
	classBatch = "batch"
	classProd  = "prod"
)

// classes are the classes the run creates: name, value, preemptible. The
// batch grace is drawn from the seed (batchGrace).
var classes = []struct {
	name        string
	value       int64
	preemptible bool
}{{classBatch, -100, true}, {classProd, 1000, false}}

// preemptibleClass says whether a class is preemptible, as the client
// knows it from the classes it made: the history's model takes it from
// here, not from what the create answered.
func preemptibleClass(name string) bool { return name == classBatch }

// batchGrace is the batch class's grace, 0 to 60 s by the seed: a grace of
// 0 kills at once, which the unassign carries as such.
func batchGrace(seed uint64) int64 { return int64(seed % 61) }

// quotas are each tenant's limits: GPUs bind before the fleet runs out for
// one tenant, never for both at once.
var quotas = map[string]int64{"gpu": 64, "vcpu": 1000, "memory": 10_000_000, "disk": 1_000_000}

// seed creates the tenants, site, pool, nodes, quotas and priority
// classes (the mix's tenants may use them all); the first two nodes join,
// so that their daemon sessions can come and go.
func seed(ctx context.Context, h *commands.Handlers, q *db.Queries, grace int64) (fleet, error) {
	f := fleet{layouts: map[string]core.GPULayout{}}
	actors := append([]core.Actor{operator}, tenants...)
	for i := range rushSize {
		actors = append(actors, rushTenant(i))
	}
	for _, a := range actors {
		if err := q.TenantEnsure(ctx, a.Tenant); err != nil {
			return f, fmt.Errorf("tenant %s: %w", a.Tenant, err)
		}
	}
	if _, err := h.CreateSite(ctx, operator, commands.CreateSite{ID: site, Name: "Torture site"}); err != nil {
		return f, err
	}
	for _, p := range []string{pool, rushPool} {
		if _, err := h.CreatePool(ctx, operator, commands.CreatePool{ID: p, SiteID: site, Kind: commands.PoolBareMetal}); err != nil {
			return f, err
		}
	}
	for _, t := range actors[1:] {
		for res, max := range quotas {
			if _, err := h.SetQuota(ctx, operator, commands.SetQuota{Tenant: t.Tenant, Resource: res, Max: max}); err != nil {
				return f, err
			}
		}
	}
	var names []string
	for _, c := range classes {
		cmd := commands.CreatePriorityClass{Name: c.name, Value: c.value, Preemptible: c.preemptible}
		if c.preemptible {
			cmd.GraceSeconds = &grace
		}
		if _, err := h.CreatePriorityClass(ctx, operator, cmd); err != nil {
			return f, fmt.Errorf("class %s: %w", c.name, err)
		}
		names = append(names, c.name)
	}
	for _, t := range tenants {
		if _, err := h.SetTenantPriorityClasses(ctx, operator, commands.SetTenantPriorityClasses{Tenant: t.Tenant,
			Classes: names}); err != nil {
			return f, fmt.Errorf("classes of %s: %w", t.Tenant, err)
		}
	}
	for _, spec := range fleetSpec {
		for range spec.count {
			id := fmt.Sprintf("tn%02d", len(f.nodes))
			var gpus []commands.GPUInventory
			for i, l := range spec.layouts {
				uuid := fmt.Sprintf("GPU-%s-%d", id, i)
				gpus = append(gpus, commands.GPUInventory{UUID: uuid, Model: "a100", MemoryMB: 81920, Layout: l})
				f.gpus = append(f.gpus, uuid)
				f.layouts[uuid] = l
			}
			if _, err := h.RegisterNode(ctx, operator, commands.RegisterNode{ID: id, PoolID: pool,
				VCPU: 64, MemoryMB: 512 * 1024, DiskGB: 2000, GPUs: gpus}); err != nil {
				return f, fmt.Errorf("node %s: %w", id, err)
			}
			f.nodes = append(f.nodes, id)
		}
	}
	// The rush pool's nodes are not the fleet's: the mix never picks them.
	for i := range rushNodes {
		id := fmt.Sprintf("tr%02d", i)
		var gpus []commands.GPUInventory
		for g := range rushGPUs {
			gpus = append(gpus, commands.GPUInventory{UUID: fmt.Sprintf("GPU-%s-%d", id, g), Model: "a100",
				MemoryMB: 81920, Layout: exclusive})
		}
		if _, err := h.RegisterNode(ctx, operator, commands.RegisterNode{ID: id, PoolID: rushPool,
			VCPU: 64, MemoryMB: 512 * 1024, DiskGB: 2000, GPUs: gpus}); err != nil {
			return f, fmt.Errorf("node %s: %w", id, err)
		}
	}
	for _, id := range f.nodes[:2] {
		if _, err := h.JoinNode(ctx, operator, id); err != nil {
			return f, fmt.Errorf("join %s: %w", id, err)
		}
		f.daemonized = append(f.daemonized, id)
	}
	return f, nil
}
