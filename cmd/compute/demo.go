package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/bettercompute/compute/agent"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/console"
	"github.com/bettercompute/compute/core"
)

// demoNode is one node of the demo fleet: its registration, and the
// --fake-gpus inventory with which `compute agent` reports exactly the GPUs
// registered for it (agent.FakeGPUs: UUIDs GPU-<node>-<i>, models and
// memory named as pools and quotas name them).
type demoNode struct {
	Register commands.RegisterNode
	FakeGPUs string
}

// demoNodes is the demo fleet: exclusive H100s, a MIG-partitioned A100
// node and a time-sliced L4 node. Their GPUs are agent.FakeGPUs of their
// FakeGPUs spec, so the demo and a fake agent agree by construction.
func demoNodes() ([]demoNode, error) {
	specs := []struct {
		id, fake             string
		vcpu, memoryMB, disk int64
		layout               core.GPULayout
	}{
		{"demo-node-1", "8xH100-80GB", 128, 1 << 20, 8000, core.GPULayout{Mode: core.GPUExclusive}},
		{"demo-node-2", "4xA100-80GB", 64, 512 << 10, 4000,
			core.GPULayout{Mode: core.GPUMIG, MIG: []string{"3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"}}},
		{"demo-node-3", "4xL4-24GB", 32, 256 << 10, 2000, core.GPULayout{Mode: core.GPUTimeSlice, Slots: 4}},
	}
	out := make([]demoNode, 0, len(specs))
	for _, s := range specs {
		fake, err := agent.FakeGPUs(s.id, s.fake)
		if err != nil {
			return nil, fmt.Errorf("demo node %s: %w", s.id, err)
		}
		gpus := make([]commands.GPUInventory, len(fake))
		for i, g := range fake {
			gpus[i] = commands.GPUInventory{UUID: g.UUID, Model: g.Model, MemoryMB: g.MemoryMB, Layout: s.layout}
		}
		out = append(out, demoNode{FakeGPUs: s.fake, Register: commands.RegisterNode{ID: s.id, PoolID: demoPool,
			VCPU: s.vcpu, MemoryMB: s.memoryMB, DiskGB: s.disk, GPUs: gpus}})
	}
	return out, nil
}

// demoPool is the demo fleet's pool.
const demoPool = "demo-pool"

// demoEndpoints is where the demo's daemons and printed commands reach the
// server (the API's and the gateway's listen addresses), and the demo's
// directory, which holds the daemons' state.
type demoEndpoints struct {
	Addr, GatewayAddr, Dir string
}

// demoFleet is what seedDemo set up: the nodes, and which of them it
// registered now (the others existed already), and whether it created the
// site and the pool now.
type demoFleet struct {
	Nodes      []demoNode
	Registered map[string]bool
	Created    struct{ Site, Pool bool }
}

// created counts the fleet's parts (the site, the pool, the nodes) and
// how many of them this run created.
func (f demoFleet) created() (created, parts int) {
	for _, c := range []bool{f.Created.Site, f.Created.Pool} {
		if c {
			created++
		}
	}
	for _, n := range f.Nodes {
		if f.Registered[n.Register.ID] {
			created++
		}
	}
	return created, 2 + len(f.Nodes)
}

// existed reports whether any part of the fleet was there before this run.
func (f demoFleet) existed() bool {
	created, parts := f.created()
	return created < parts
}

// headline says what seeding did, so a second `serve --demo` on the same
// database does not claim to have seeded what it found and kept: "seeded"
// when it created every part, "already present" when it created none, and
// "completed" when it added what was missing.
func (f demoFleet) headline() string {
	const what = "site demo-site, pool demo-pool, 3 nodes (8×H100, 4×A100 MIG, 4×L4 time-slice)"
	switch created, parts := f.created(); created {
	case parts:
		return "Demo fleet seeded: " + what + "."
	case 0:
		return "Demo fleet already present: " + what + ", kept as it is."
	default:
		return fmt.Sprintf("Demo fleet completed: %s; %d of its %d parts existed and were kept as they are.",
			what, parts-created, parts)
	}
}

// seedDemo gives a fresh installation something to look at: a site, a
// bare-metal pool, three nodes (demoNodes), quotas for tenant "acme" and two
// tokens. Running it again on the same database keeps what exists, says
// so, and issues new tokens (the old ones' secrets cannot be shown
// again). What to run is printed to out; the nodes' daemons are the
// caller's to start (runDemoDaemons).
func seedDemo(ctx context.Context, h *commands.Handlers, tokens *commands.Tokens, at demoEndpoints, now time.Time,
	out io.Writer, logger *slog.Logger) (demoFleet, error) {
	op := bootstrapActor
	skipExisting := func(err error) error {
		if core.CodeOf(err) == core.CodeConflict {
			return nil
		}
		return err
	}
	nodes, err := demoNodes()
	if err != nil {
		return demoFleet{}, err
	}
	fleet := demoFleet{Nodes: nodes, Registered: map[string]bool{}}
	_, err = h.CreateSite(ctx, op, commands.CreateSite{ID: "demo-site", Name: "Demo site"})
	if skipExisting(err) != nil {
		return demoFleet{}, fmt.Errorf("demo site: %w", err)
	}
	fleet.Created.Site = err == nil
	_, err = h.CreatePool(ctx, op, commands.CreatePool{ID: demoPool, SiteID: "demo-site", Kind: "bare-metal"})
	if skipExisting(err) != nil {
		return demoFleet{}, fmt.Errorf("demo pool: %w", err)
	}
	fleet.Created.Pool = err == nil
	for _, n := range nodes {
		_, err := h.RegisterNode(ctx, op, n.Register)
		if skipExisting(err) != nil {
			return demoFleet{}, fmt.Errorf("demo node %s: %w", n.Register.ID, err)
		}
		fleet.Registered[n.Register.ID] = err == nil
	}
	operator, err := tokens.CreateToken(ctx, op, "ops", "demo-operator", core.RoleOperator)
	if err != nil {
		return demoFleet{}, err
	}
	tenant, err := tokens.CreateToken(ctx, op, "acme", "demo-user", core.RoleMember)
	if err != nil {
		return demoFleet{}, err
	}
	if operator.Secret == "" || tenant.Secret == "" {
		return demoFleet{}, errors.New("demo: token issued without a secret")
	}
	// Quotas need the tenant, which issuing its token created. One that
	// acme already uses beyond the demo's (an operator raised it, and acme
	// booked more) is kept: the quota cannot go below its use.
	quotas := map[string]int64{core.ResourceGPU: 16, core.ResourceVCPU: 256, core.ResourceMemory: 2 << 20, core.ResourceDisk: 20000}
	for res, max := range quotas {
		if _, err := h.SetQuota(ctx, op, commands.SetQuota{Tenant: "acme", Resource: res, Max: max}); skipExisting(err) != nil {
			return demoFleet{}, fmt.Errorf("demo quota %s: %w", res, err)
		}
	}
	isolation := "each allocation's workloads run in a container of their own (runc)"
	if demoIsolation() == agent.IsolationNone {
		isolation = "workloads run WITHOUT isolation, as your user: a development machine only (isolation needs root and runc)"
	}
	// A token's secret is stored only as a hash, so the tokens of an
	// earlier run cannot be printed again: every run issues two new ones,
	// and says so when the fleet was there before.
	again := ""
	if fleet.existed() {
		again = `  These tokens are new: a secret is shown only when its token is issued, so each run
  issues two more. Those of earlier runs stay valid until revoked (compute tokens list,
  compute tokens revoke ID). acme's quotas were set to the demo's again where its use allows.
`
	}
	api := localURL("http", at.Addr)
	fmt.Fprintf(out, `
%s
  operator token (tenant ops):  %s
  tenant token   (tenant acme): %s
%s
The nodes' daemons run in this process, with fake GPUs (state in %s; %s).

Try, from another terminal (docs/cli.md):
  export COMPUTE_SERVER=%s COMPUTE_TOKEN=%s
  ./bin/compute reservations create --pool demo-pool --gpus 2 --gpu-model H100-80GB --vcpu 16 --memory-mb 65536 --disk-gb 100 --start now --duration 24h
  ./bin/compute reservations get rsv_…   # rsv_…: the id printed by the line above; active within seconds
  ./bin/compute instances create --reservation rsv_… --command 'sleep 600'   # once it is active; its output is not kept (README.md, Using it: exec)
  ./bin/compute reservations list
Or with curl:
  curl -s -H "Authorization: Bearer %s" -H 'Content-Type: application/json' \
    -d '{"poolId":"demo-pool","gpus":2,"gpuModel":"H100-80GB","vcpu":16,"memoryMb":65536,"diskGb":100,"start":"%s","end":"%s"}' \
    %s/v1/reservations
  curl -s -H "Authorization: Bearer %s" %s/v1/nodes/demo-node-1

The web console, in a browser (sign in with either token):
  %s

Ctrl-C here stops the server and the nodes' daemons (and the private PostgreSQL, if it started one).

`, fleet.headline(), operator.Secret, tenant.Secret, again, at.Dir, isolation, api, tenant.Secret, tenant.Secret, now.UTC().Format(time.RFC3339),
		now.UTC().Add(24*time.Hour).Format(time.RFC3339), api, operator.Secret, api, api+console.Prefix)
	created, parts := fleet.created()
	if created == parts {
		logger.Info("demo fleet seeded")
	} else {
		logger.Info("demo fleet was present; kept what existed", "created", created, "kept", parts-created)
	}
	return fleet, nil
}

// localURL is scheme://host:port for a listen address. An address that
// listens on every interface (":8080", "0.0.0.0:8080", "[::]:8080") is
// reached at localhost; an IPv6 host keeps its brackets.
func localURL(scheme, addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return scheme + "://" + addr
	}
	if host == "" || net.ParseIP(host).IsUnspecified() {
		host = "localhost"
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}
