package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/cluster"
	"github.com/bettercompute/compute/outbox"
	"github.com/bettercompute/compute/projections"
	"github.com/bettercompute/compute/queries"
)

// ReplicaResult is "replica-served query throughput ÷ primary-served":
// the same read-model query load (a tenant's reservation page, then one of
// its reservations at a position, as a client reading its own write does)
// served by the primary alone, then by a hot standby of it
// (COMPUTE_READ_DATABASE_URL), with the primary's CPU per 1,000 queries in
// each case. On one machine both servers share its cores, so the
// throughput ratio shows the standby's cost; the primary's CPU shows what
// it takes off the primary, which is the point on two machines.
type ReplicaResult struct {
	Clients      int     `json:"clients"`
	Seconds      float64 `json:"secondsPerRun"`
	Reservations int     `json:"reservations"`
	// QPS is queries per second (a page and a get each count one).
	PrimaryQPS float64 `json:"primaryQps"`
	ReplicaQPS float64 `json:"replicaQps"`
	// PrimaryCPUMsPer1000 is the primary server's CPU (all its processes)
	// per 1,000 queries, with the primary serving and with the standby.
	PrimaryCPUMsPer1000Primary float64 `json:"primaryCpuMsPer1000PrimaryServed"`
	PrimaryCPUMsPer1000Replica float64 `json:"primaryCpuMsPer1000ReplicaServed"`
	// ReplicaLagMs is the standby's lag as the run ended.
	ReplicaLagMs float64 `json:"replicaLagMs"`
}

// replicaSuite books reservations in a fresh database on the private
// cluster, projects them, makes a standby of the cluster with
// pg_basebackup, and runs the query load against each. It needs the
// private cluster (a standby of a server given by DATABASE_URL is the
// operator's to make).
func replicaSuite(ctx context.Context, srv *server, dbURL string, p plan, prog *progress) (ReplicaResult, error) {
	if srv.cluster == nil {
		return ReplicaResult{}, errors.New("needs the private cluster (DATABASE_URL is set)")
	}
	prog.set("replica: seeding")
	app, err := setupApp(ctx, dbURL, p)
	if err != nil {
		return ReplicaResult{}, err
	}
	defer app.close()
	if _, err := app.seedTo(ctx, nodesPerPool, prog); err != nil {
		return ReplicaResult{}, err
	}
	ids, head, err := bookAndProject(ctx, app, p.replicaReservations)
	if err != nil {
		return ReplicaResult{}, err
	}

	prog.set("replica: pg_basebackup")
	dir, err := os.MkdirTemp("", "compute-bench-standby-")
	if err != nil {
		return ReplicaResult{}, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil { // the postgres user must enter it
		return ReplicaResult{}, err
	}
	standby, err := srv.cluster.StartStandby(ctx, cluster.Options{Dir: filepath.Join(dir, "standby")})
	if err != nil {
		return ReplicaResult{}, err
	}
	defer func() { _ = standby.Stop(); _ = os.RemoveAll(standby.Dir()) }()

	res := ReplicaResult{Clients: p.httpClients, Seconds: p.apiPhase.Seconds(), Reservations: len(ids)}
	primary, err := pg.Connect(ctx, dbURL, pg.PoolOptions{MaxConns: int32(p.httpClients), ApplicationName: "compute-bench-reads"})
	if err != nil {
		return res, err
	}
	defer primary.Close()
	replicaPool, err := pg.Connect(ctx, urlOnPort(dbURL, standby), pg.PoolOptions{MaxConns: int32(p.httpClients),
		ApplicationName: "compute-bench-reads"})
	if err != nil {
		return res, err
	}
	defer replicaPool.Close()
	replica := &queries.Replica{Pool: replicaPool, Primary: primary, Observe: func(time.Duration, bool) {}}
	deadline := time.After(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !replica.InRotation() { // caught up with the base backup's end
		if _, err := replica.Check(ctx, time.Now()); err != nil {
			return res, err
		}
		select {
		case <-deadline:
			return res, errors.New("the standby did not catch up within a minute")
		case <-tick.C:
		}
	}
	meter := newCPUMeter(ctx, primary)
	for _, mode := range []struct {
		name      string
		svc       *queries.Service
		qps, cpu  *float64
		readsFrom string
	}{
		{"primary", &queries.Service{Pool: primary}, &res.PrimaryQPS, &res.PrimaryCPUMsPer1000Primary, "primary"},
		{"replica", &queries.Service{Pool: primary, Replica: replica}, &res.ReplicaQPS, &res.PrimaryCPUMsPer1000Replica, "standby"},
	} {
		prog.set("replica: queries served by the %s (%s)", mode.readsFrom, p.apiPhase)
		c0 := meter.read()
		n, secs, err := readLoad(ctx, mode.svc, app.tenants, ids, head, p.httpClients, p.apiPhase)
		if err != nil {
			return res, fmt.Errorf("%s: %w", mode.name, err)
		}
		c1 := meter.read()
		*mode.qps = float64(n) / secs
		if c0.serverOK && c1.serverOK && n > 0 {
			*mode.cpu = float64((c1.server - c0.server).Microseconds()) / 1000 / float64(n) * 1000
		}
	}
	if _, err := replica.Check(ctx, time.Now()); err == nil {
		res.ReplicaLagMs = float64(replica.Lag().Microseconds()) / 1000
	}
	return res, nil
}

// bookedReservation is one reservation of the replica suite and its tenant.
type bookedReservation struct {
	id     string
	tenant core.Actor
}

// bookAndProject books n one-GPU reservations over the app's tenants and
// runs every projection until it has passed the last; it returns them and
// that position.
func bookAndProject(ctx context.Context, app *appEnv, n int) ([]bookedReservation, outbox.Position, error) {
	var out []bookedReservation
	var head outbox.Position
	for i := range n {
		actor := core.Actor{Tenant: app.tenants[i%len(app.tenants)], Identity: "bench", Role: core.RoleMember}
		start := app.window.Add(time.Duration(i) * time.Hour)
		r, err := app.h.CreateReservation(ctx, actor, commands.CreateReservation{PoolID: app.pools[0], GPUs: 1,
			Start: start, End: start.Add(time.Hour)})
		if err != nil {
			return nil, head, fmt.Errorf("book %d: %w", i, err)
		}
		out = append(out, bookedReservation{id: r.Reservation.ID, tenant: actor})
		head = r.Position
	}
	for _, proj := range projections.All() {
		d := outbox.NewTxDispatcher(app.pool, "compute-bench", proj, nil)
		for {
			cur, err := outbox.CursorOf(ctx, db.New(app.pool), d.SinkID())
			if err != nil {
				return nil, head, err
			}
			if !cur.Less(head) {
				break
			}
			if _, err := d.RunOnce(ctx); err != nil {
				return nil, head, err
			}
		}
	}
	return out, head, nil
}

// readLoad runs clients goroutines of queries for phase: a tenant's
// first page of reservations, then one of its reservations at min.
func readLoad(ctx context.Context, svc *queries.Service, tenants []string, rs []bookedReservation, min outbox.Position,
	clients int, phase time.Duration) (int64, float64, error) {
	var n atomic.Int64
	var firstErr error
	var once sync.Once
	start := time.Now()
	deadline := start.Add(phase)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				r := rs[rand.IntN(len(rs))]
				_, _, err := svc.ListReservations(ctx, r.tenant, queries.ListReservations{Limit: 50})
				if err == nil {
					_, err = svc.GetReservation(ctx, r.tenant, r.id, min)
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				n.Add(2)
			}
		})
	}
	wg.Wait()
	return n.Load(), time.Since(start).Seconds(), firstErr
}

// urlOnPort is dbURL (a database on the private cluster) on standby's
// port: the standby has every database of the cluster.
func urlOnPort(dbURL string, standby *cluster.Cluster) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return dbURL
	}
	u.Host = net.JoinHostPort(u.Hostname(), strconv.Itoa(standby.Port()))
	return u.String()
}

// ratios are the suite's: throughput served by the standby ÷ by the
// primary, and the primary's CPU per query with the standby ÷ without.
func (r ReplicaResult) ratios() []Ratio {
	if r.PrimaryQPS == 0 || r.ReplicaQPS == 0 {
		return nil
	}
	out := []Ratio{{Name: "read-model queries/s served by a hot standby ÷ by the primary", Value: r.ReplicaQPS / r.PrimaryQPS,
		Numerator: "COMPUTE_READ_DATABASE_URL set", Denominator: "primary only"}}
	if r.PrimaryCPUMsPer1000Primary > 0 {
		out = append(out, Ratio{Name: "primary CPU per read-model query, standby serving ÷ primary serving",
			Value:     r.PrimaryCPUMsPer1000Replica / r.PrimaryCPUMsPer1000Primary,
			Numerator: "standby serving", Denominator: "primary serving"})
	}
	return out
}

// print prints the suite's figures.
func (r ReplicaResult) print(w io.Writer) {
	if r.PrimaryQPS == 0 {
		return
	}
	fmt.Fprintf(w, "\nREAD REPLICA  %d clients × %.0f s, %d reservations: read-model queries (a page + a get at a position)\n",
		r.Clients, r.Seconds, r.Reservations)
	fmt.Fprintf(w, "  served by the primary: %.0f queries/s, primary CPU %.2f ms per 1,000\n", r.PrimaryQPS, r.PrimaryCPUMsPer1000Primary)
	fmt.Fprintf(w, "  served by the standby: %.0f queries/s, primary CPU %.2f ms per 1,000 (standby lag at the end %.1f ms)\n",
		r.ReplicaQPS, r.PrimaryCPUMsPer1000Replica, r.ReplicaLagMs)
}
