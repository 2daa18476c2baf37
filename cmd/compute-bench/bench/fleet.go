package bench

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/migrate"
)

// Fleet shape: pools of nodesPerPool nodes, all in one site, each node
// eight exclusive GPUs of one model. Ten nodes per pool makes "all requests
// at 10 nodes" one pool, and "uniform" a random pool per request.
const (
	benchSite    = "bench-site"
	nodesPerPool = 10
	gpusPerNode  = 8
	gpuModel     = "H100-80GB"
	// seedTimeout bounds seeding one fleet size; 10,000 nodes take about
	// a minute on the 2-core machine.
	seedTimeout = 15 * time.Minute
)

// operator is the bootstrap actor that seeds the fleet.
var operator = core.Actor{Tenant: "ops", Identity: "bench", Role: core.RoleOperator}

// appEnv is the migrated application database with its fleet and tenants.
type appEnv struct {
	url     string
	pool    *pgxpool.Pool // seeding and statistics; load runs open their own
	h       *commands.Handlers
	tenants []string
	pools   []string
	nodes   int
	window  time.Time // start of the one-hour window every request asks for
	workers int
	// scaleRequests is how many placements scalePoint times.
	scaleRequests int
}

// newAppEnv creates the application database on srv and prepares it.
func newAppEnv(ctx context.Context, srv *server, p plan, prog *progress) (*appEnv, error) {
	url, err := srv.freshDatabase(ctx, "app")
	if err != nil {
		return nil, err
	}
	prog.set("migrating and creating %d tenants", p.tenants)
	return setupApp(ctx, url, p)
}

// setupApp migrates the database at url (a no-op when already migrated),
// creates the site and p.tenants tenants, each with a GPU quota no run can
// exhaust: the quota row is still updated on every request, which is the
// contention under test, but never refuses one.
func setupApp(ctx context.Context, url string, p plan) (*appEnv, error) {
	pool, err := pg.Connect(ctx, url, pg.PoolOptions{MaxConns: int32(p.seedWorkers + 2),
		IdleInTxTimeout: time.Minute, ApplicationName: "compute-bench-seed"})
	if err != nil {
		return nil, err
	}
	e := &appEnv{url: url, pool: pool, workers: p.seedWorkers, scaleRequests: p.scaleRequests,
		// No daemons: the seeded nodes must stay schedulable.
		h: commands.New(pool, commands.Config{Logger: slog.New(slog.DiscardHandler), Test: commands.TestConfig{NodesWithoutDaemons: true}})}
	if err := e.setup(ctx, p); err != nil {
		pool.Close()
		return nil, err
	}
	return e, nil
}

func (e *appEnv) setup(ctx context.Context, p plan) error {
	if err := migrate.Up(ctx, e.pool); err != nil {
		return err
	}
	if _, err := e.h.CreateSite(ctx, operator, commands.CreateSite{ID: benchSite, Name: "Benchmark site"}); err != nil {
		return fmt.Errorf("bench site: %w", err)
	}
	tokens := &commands.Tokens{Pool: e.pool}
	for i := range p.tenants {
		t := fmt.Sprintf("bench-t%03d", i)
		if _, err := tokens.CreateToken(ctx, operator, t, "bench", core.RoleMember); err != nil {
			return fmt.Errorf("tenant %s: %w", t, err)
		}
		if _, err := e.h.SetQuota(ctx, operator, commands.SetQuota{Tenant: t, Resource: core.ResourceGPU, Max: 1 << 40}); err != nil {
			return fmt.Errorf("quota of %s: %w", t, err)
		}
		e.tenants = append(e.tenants, t)
	}
	now, err := db.New(e.pool).ClockNow(ctx)
	if err != nil {
		return fmt.Errorf("clock: %w", err)
	}
	e.window = now.Add(24 * time.Hour).Truncate(time.Hour)
	return nil
}

func (e *appEnv) close() { e.pool.Close() }

// poolIDs lists the fleet's pools; the first is the hot spot's.
func (e *appEnv) poolIDs() []string { return e.pools }

// seedTo registers nodes until the fleet has n, in parallel through the
// real RegisterNode command (so the fleet has every row and event a real
// one has), bounded by seedTimeout. It returns the seeding rate.
func (e *appEnv) seedTo(ctx context.Context, n int, prog *progress) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, seedTimeout)
	defer cancel()
	for len(e.pools)*nodesPerPool < n {
		id := fmt.Sprintf("bench-pool-%04d", len(e.pools))
		if _, err := e.h.CreatePool(ctx, operator, commands.CreatePool{ID: id, SiteID: benchSite, Kind: commands.PoolBareMetal}); err != nil {
			return 0, fmt.Errorf("pool %s: %w", id, err)
		}
		e.pools = append(e.pools, id)
	}
	start, from := time.Now(), e.nodes
	next := atomic.Int64{}
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, e.workers)
	for range e.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n && ctx.Err() == nil; i = int(next.Add(1) - 1) {
				if err := e.registerNode(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
				if i%100 == 0 {
					prog.set("seeding nodes: %d / %d", i, n)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("seeding %d nodes: %w", n, err)
	}
	e.nodes = n
	return float64(n-from) / time.Since(start).Seconds(), nil
}

func (e *appEnv) registerNode(ctx context.Context, i int) error {
	gpus := make([]commands.GPUInventory, gpusPerNode)
	for g := range gpus {
		gpus[g] = commands.GPUInventory{UUID: fmt.Sprintf("GPU-bench-%05d-%d", i, g), Model: gpuModel,
			MemoryMB: 81920, Layout: core.GPULayout{Mode: core.GPUExclusive}}
	}
	_, err := e.h.RegisterNode(ctx, operator, commands.RegisterNode{ID: fmt.Sprintf("bench-node-%05d", i),
		PoolID: e.pools[i/nodesPerPool], VCPU: 128, MemoryMB: 1 << 20, DiskGB: 8000, GPUs: gpus})
	return err
}
