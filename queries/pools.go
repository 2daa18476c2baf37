package queries

import (
	"context"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// Pool is a pool as the read API shows it: its site, kind and the
// overcommit ratios that turn its nodes' allocatable scalars into capacity.
type Pool struct {
	ID     string `json:"id"`
	SiteID string `json:"siteId"`
	Kind   string `json:"kind"`
	// LostAfterSeconds is set only for provider and vps-host pools that
	// mark a node lost after that long unreachable.
	LostAfterSeconds *int32  `json:"lostAfterSeconds,omitempty"`
	CPURatio         float64 `json:"cpuRatio"`
	MemoryRatio      float64 `json:"memoryRatio"`
	DiskRatio        float64 `json:"diskRatio"`
	// WorkloadNetwork is the network its allocations' workloads get:
	// none, bridge or host (single-tenant pools only).
	WorkloadNetwork string    `json:"workloadNetwork"`
	Version         int64     `json:"version"`
	CreatedAt       time.Time `json:"createdAt"`
}

func poolOf(r db.PoolGetRow) Pool {
	return Pool{ID: r.ID, SiteID: r.SiteID, Kind: r.Kind, LostAfterSeconds: r.LostAfterSeconds,
		CPURatio: r.CpuRatio, MemoryRatio: r.MemoryRatio, DiskRatio: r.DiskRatio, WorkloadNetwork: r.WorkloadNetwork,
		Version: r.Version, CreatedAt: r.CreatedAt.UTC()}
}

// GetPool reads one pool. Like sites, pools hold no tenant's data and every
// caller may read them: a reservation names the pool (or site) it wants.
// Their capacity and nodes stay operator reads.
func (s *Service) GetPool(ctx context.Context, _ core.Actor, id string) (Pool, error) {
	r, err := s.q().PoolGet(ctx, id)
	if err != nil {
		return Pool{}, wrap(err, "pool "+id)
	}
	return poolOf(r), nil
}

// ListPools is a page request of the pool list.
type ListPools struct {
	// SiteID keeps only the pools of that site.
	SiteID string
	Cursor string
	Limit  int
}

// ListPools pages through the pools in id order.
func (s *Service) ListPools(ctx context.Context, _ core.Actor, l ListPools) (items []Pool, nextCursor string, err error) {
	limit, after, err := keysetPage("pool", l.Cursor, l.Limit)
	if err != nil {
		return nil, "", err
	}
	var site *string
	if l.SiteID != "" {
		site = &l.SiteID
	}
	rows, err := s.q().PoolList(ctx, db.PoolListParams{SiteID: site, AfterID: after, MaxRows: int32(limit + 1)})
	if err != nil {
		return nil, "", wrap(err, "pools")
	}
	return pageOf(rows, limit, "pool", func(r db.PoolListRow) []string { return []string{r.ID} },
		func(r db.PoolListRow) Pool { return poolOf(db.PoolGetRow(r)) })
}
