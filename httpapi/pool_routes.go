package httpapi

import (
	"math"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// The operator's pool route, registered by fleetRoutes: create a pool of
// a site, its kind, overcommit ratios and workloads' network.

// createPoolRequest is the body of POST /v1/pools. Ratios left out mean
// 1, no overcommit; lostAfterSeconds left out means never lost;
// workloadNetwork left out means none (the command checks the value). A
// value given is what the schema allows — a ratio or lostAfterSeconds of
// 0, or an explicit "" network, is refused here rather than read as left
// out.
type createPoolRequest struct {
	ID               string   `json:"id"`
	SiteID           string   `json:"siteId"`
	Kind             string   `json:"kind"`
	LostAfterSeconds *int64   `json:"lostAfterSeconds"`
	CPURatio         *float64 `json:"cpuRatio"`
	MemoryRatio      *float64 `json:"memoryRatio"`
	DiskRatio        *float64 `json:"diskRatio"`
	WorkloadNetwork  *string  `json:"workloadNetwork"`
}

// poolResponse is a pool as written.
type poolResponse struct {
	ID              string  `json:"id"`
	SiteID          string  `json:"siteId"`
	Kind            string  `json:"kind"`
	CPURatio        float64 `json:"cpuRatio"`
	MemoryRatio     float64 `json:"memoryRatio"`
	DiskRatio       float64 `json:"diskRatio"`
	WorkloadNetwork string  `json:"workloadNetwork"`
	Version         int64   `json:"version"`
	Position        string  `json:"position"`
}

func (f fleetHandlers) createPool(c echo.Context) error {
	var req createPoolRequest
	key, err := bindCreate(c, &req)
	if err != nil {
		return err
	}
	if err := requireFields("id", req.ID, "siteId", req.SiteID, "kind", req.Kind); err != nil {
		return err
	}
	// The store keeps seconds in an int; beyond that the conversion to a
	// Duration would overflow into a different number.
	var lostAfter time.Duration
	if s := req.LostAfterSeconds; s != nil {
		if *s < 1 || *s > math.MaxInt32 {
			return core.Errorf(core.CodeInvalidArgument, "field \"lostAfterSeconds\" must be 1 to %d (leave it out: never lost)", math.MaxInt32)
		}
		lostAfter = time.Duration(*s) * time.Second
	}
	var ratios [3]float64
	for i, r := range []struct {
		name string
		v    *float64
	}{{"cpuRatio", req.CPURatio}, {"memoryRatio", req.MemoryRatio}, {"diskRatio", req.DiskRatio}} {
		if r.v == nil {
			continue
		}
		// The bounds are the pools table's CHECK (pools_cpu_ratio_check…),
		// named here so that the answer names the field, not the rule.
		if !(*r.v >= 1 && *r.v <= core.MaxPoolRatio) { // NaN too
			return core.Errorf(core.CodeInvalidArgument, "field %q must be 1 to %d (leave it out: no overcommit)", r.name, core.MaxPoolRatio)
		}
		ratios[i] = *r.v
	}
	network := ""
	if req.WorkloadNetwork != nil {
		if network = *req.WorkloadNetwork; network == "" {
			return core.Errorf(core.CodeInvalidArgument, "field \"workloadNetwork\" must be none, bridge or host")
		}
	}
	res, err := f.h.CreatePool(c.Request().Context(), ActorOf(c), commands.CreatePool{
		ID: req.ID, SiteID: req.SiteID, Kind: req.Kind, LostAfter: lostAfter,
		CPURatio: ratios[0], MemoryRatio: ratios[1], DiskRatio: ratios[2],
		WorkloadNetwork: network, IdempotencyKey: key,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, poolResponse{ID: res.ID, SiteID: res.SiteID, Kind: res.Kind, CPURatio: res.CPURatio,
		MemoryRatio: res.MemoryRatio, DiskRatio: res.DiskRatio, WorkloadNetwork: res.WorkloadNetwork,
		Version: res.Version, Position: res.Position.String()})
}
