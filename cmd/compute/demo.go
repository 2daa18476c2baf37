package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// seedDemo gives a fresh installation something to look at: a site, a
// bare-metal pool, three nodes (exclusive H100s, a MIG-partitioned A100 node,
// a time-sliced L4 node), quotas for tenant "acme", and two tokens. Running
// it again on the same database skips what exists and issues new tokens.
func seedDemo(ctx context.Context, h *commands.Handlers, tokens *commands.Tokens, addr string, now time.Time, logger *slog.Logger) error {
	op := bootstrapActor
	skipExisting := func(err error) error {
		if core.CodeOf(err) == core.CodeConflict {
			return nil
		}
		return err
	}
	if _, err := h.CreateSite(ctx, op, commands.CreateSite{ID: "demo-site", Name: "Demo site"}); skipExisting(err) != nil {
		return fmt.Errorf("demo site: %w", err)
	}
	if _, err := h.CreatePool(ctx, op, commands.CreatePool{ID: "demo-pool", SiteID: "demo-site", Kind: "bare-metal"}); skipExisting(err) != nil {
		return fmt.Errorf("demo pool: %w", err)
	}
	gpus := func(prefix, model string, n int, mem int64, layout core.GPULayout) []commands.GPUInventory {
		out := make([]commands.GPUInventory, n)
		for i := range out {
			out[i] = commands.GPUInventory{UUID: fmt.Sprintf("GPU-%s-%d", prefix, i), Model: model, MemoryMB: mem, Layout: layout}
		}
		return out
	}
	nodes := []commands.RegisterNode{
		{ID: "demo-node-1", PoolID: "demo-pool", VCPU: 128, MemoryMB: 1 << 20, DiskGB: 8000,
			GPUs: gpus("n1", "H100-80GB", 8, 81920, core.GPULayout{Mode: core.GPUExclusive})},
		{ID: "demo-node-2", PoolID: "demo-pool", VCPU: 64, MemoryMB: 512 << 10, DiskGB: 4000,
			GPUs: gpus("n2", "A100-80GB", 4, 81920, core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}})},
		{ID: "demo-node-3", PoolID: "demo-pool", VCPU: 32, MemoryMB: 256 << 10, DiskGB: 2000,
			GPUs: gpus("n3", "L4-24GB", 4, 24576, core.GPULayout{Mode: core.GPUTimeSlice, Slots: 4})},
	}
	for _, n := range nodes {
		if _, err := h.RegisterNode(ctx, op, n); skipExisting(err) != nil {
			return fmt.Errorf("demo node %s: %w", n.ID, err)
		}
	}
	operator, err := tokens.CreateToken(ctx, op, "ops", "demo-operator", core.RoleOperator)
	if err != nil {
		return err
	}
	tenant, err := tokens.CreateToken(ctx, op, "acme", "demo-user", core.RoleMember)
	if err != nil {
		return err
	}
	if operator.Secret == "" || tenant.Secret == "" {
		return errors.New("demo: token issued without a secret")
	}
	// Quotas need the tenant, which issuing its token created.
	quotas := map[string]int64{core.ResourceGPU: 16, core.ResourceVCPU: 256, core.ResourceMemory: 2 << 20, core.ResourceDisk: 20000}
	for res, max := range quotas {
		if _, err := h.SetQuota(ctx, op, commands.SetQuota{Tenant: "acme", Resource: res, Max: max}); err != nil {
			return fmt.Errorf("demo quota %s: %w", res, err)
		}
	}
	start := now.UTC().Truncate(time.Minute).Add(time.Minute)
	fmt.Printf(`
Demo fleet seeded: site demo-site, pool demo-pool, 3 nodes (8×H100, 4×A100 MIG, 4×L4 time-slice).
  operator token (tenant ops):  %s
  tenant token   (tenant acme): %s

Try:
  curl -s -H "Authorization: Bearer %s" -H 'Content-Type: application/json' \
    -d '{"poolId":"demo-pool","gpus":2,"gpuModel":"H100-80GB","vcpu":16,"memoryMb":65536,"diskGb":100,"start":"%s","end":"%s"}' \
    http://localhost%s/v1/reservations

`, operator.Secret, tenant.Secret, tenant.Secret, start.Format(time.RFC3339), start.Add(24*time.Hour).Format(time.RFC3339), addr)
	logger.Info("demo fleet seeded")
	return nil
}
