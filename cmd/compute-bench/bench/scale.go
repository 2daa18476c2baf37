package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"slices"
	"time"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// scaleBudget bounds the sequential placements at one fleet size: when
// placement is slow at a large fleet, fewer requests are timed rather than
// the run taking hours. Requests in the table says how many ran.
const scaleBudget = 2 * time.Minute

// ScalePoint is placement latency with the fleet at one size. Requests name
// the site, not a pool, so the placer considers every node of the fleet:
// this is the cost that grows with the fleet. One client, no contention.
type ScalePoint struct {
	Nodes           int     `json:"nodes"`
	Requests        int     `json:"requests"`
	Booked          int     `json:"booked"`
	P50Ms           float64 `json:"createP50Ms"`
	P99Ms           float64 `json:"createP99Ms"`
	SeedNodesPerSec float64 `json:"seedNodesPerSec"`
}

// scalePoint grows the fleet to n nodes and times p.scaleRequests
// site-wide one-GPU reservations, each released before the next.
func (e *appEnv) scalePoint(ctx context.Context, n int, prog *progress) (ScalePoint, error) {
	rate, err := e.seedTo(ctx, n, prog)
	if err != nil {
		return ScalePoint{}, err
	}
	return e.timeSitePlacements(ctx, n, rate, prog)
}

func (e *appEnv) timeSitePlacements(ctx context.Context, n int, seedRate float64, prog *progress) (ScalePoint, error) {
	deadline := time.Now().Add(scaleBudget)
	ctx, cancel := context.WithTimeout(ctx, 2*scaleBudget) // a hard bound should one request hang
	defer cancel()
	h := commands.New(e.pool, commands.Config{Logger: slog.New(slog.DiscardHandler)})
	pt := ScalePoint{Nodes: n, SeedNodesPerSec: seedRate}
	var lat []time.Duration
	requests := e.scaleRequests
	for i := 0; i < requests && time.Now().Before(deadline); i++ {
		prog.set("placement latency at %d nodes: %d / %d", n, i, requests)
		actor := core.Actor{Tenant: e.tenants[i%len(e.tenants)], Identity: "bench", Role: core.RoleMember}
		t0 := time.Now()
		res, err := h.CreateReservation(ctx, actor, commands.CreateReservation{SiteID: benchSite, GPUs: 1,
			GPUModel: gpuModel, Start: e.window, End: e.window.Add(time.Hour)})
		took := time.Since(t0)
		if err != nil {
			return pt, fmt.Errorf("site placement at %d nodes: %w", n, err)
		}
		pt.Requests++
		if res.Reservation.State == core.ReservationBooked {
			pt.Booked++
			lat = append(lat, took)
		}
		if err := e.finish(ctx, h, actor, res.Reservation); err != nil {
			return pt, fmt.Errorf("release after site placement: %w", err)
		}
	}
	if pt.Booked == 0 {
		return pt, fmt.Errorf("no site placement booked at %d nodes", n)
	}
	pt.P50Ms, pt.P99Ms = percentileMs(lat, 0.50), percentileMs(lat, 0.99)
	return pt, nil
}

// percentileMs is the nearest-rank percentile, in milliseconds.
func percentileMs(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return float64(s[max(0, min(i, len(s)-1))].Microseconds()) / 1000
}

// urlWith adds run-time parameters to a connection URL (pgx sends unknown
// URL parameters to the server as session settings).
func urlWith(raw string, params map[string]string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("parse database url: %w", err)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}
