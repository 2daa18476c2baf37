// Package commandstest seeds the small fleet that the command, projection and
// query tests share: tenants ops, acme and globex, site fra1 with the
// bare-metal pool fra1-gpu, generous quotas, and nodes of a100 GPUs. It is
// test support: only _test files import it.
package commandstest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// The actors the tests act as.
var (
	Operator = core.Actor{Tenant: "ops", Identity: "alice@ops", Role: core.RoleOperator}
	TenantA  = core.Actor{Tenant: "acme", Identity: "bob@acme", Role: core.RoleMember}
	TenantB  = core.Actor{Tenant: "globex", Identity: "carol@globex", Role: core.RoleMember}
)

// The site and pool every seeded fleet has.
const (
	Site = "fra1"
	Pool = "fra1-gpu"
)

// Seed creates the tenants, the site, the pool (with the given vCPU
// overcommit ratio; 0 keeps the default) and quotas for acme and globex
// large enough never to be the constraint.
func Seed(t testing.TB, d *pgtest.DB, h *commands.Handlers, cpuRatio float64) {
	t.Helper()
	ctx := context.Background()
	for _, tn := range []string{"ops", "acme", "globex"} {
		require.NoError(t, d.Q.TenantEnsure(ctx, tn))
	}
	_, err := h.CreateSite(ctx, Operator, commands.CreateSite{ID: Site, Name: "Frankfurt 1"})
	require.NoError(t, err)
	_, err = h.CreatePool(ctx, Operator, commands.CreatePool{ID: Pool, SiteID: Site, Kind: commands.PoolBareMetal, CPURatio: cpuRatio})
	require.NoError(t, err)
	for _, tn := range []string{"acme", "globex"} {
		for res, max := range map[string]int64{"gpu": 1000, "vcpu": 100000, "memory": 10000000, "disk": 1000000} {
			_, err := h.SetQuota(ctx, Operator, commands.SetQuota{Tenant: tn, Resource: res, Max: max})
			require.NoError(t, err)
		}
	}
}

// Node registers node id in the pool with one a100 (80 GB) per layout, 64
// vCPU, 512 GB memory and 2 TB disk, and returns the GPU ids.
func Node(t testing.TB, h *commands.Handlers, id string, layouts ...core.GPULayout) []string {
	t.Helper()
	var gpus []commands.GPUInventory
	var ids []string
	for i, l := range layouts {
		uuid := fmt.Sprintf("GPU-%s-%d", id, i)
		ids = append(ids, uuid)
		gpus = append(gpus, commands.GPUInventory{UUID: uuid, Model: "a100", MemoryMB: 81920, Layout: l})
	}
	_, err := h.RegisterNode(context.Background(), Operator, commands.RegisterNode{ID: id, PoolID: Pool,
		VCPU: 64, MemoryMB: 512 * 1024, DiskGB: 2000, GPUs: gpus})
	require.NoError(t, err)
	return ids
}
