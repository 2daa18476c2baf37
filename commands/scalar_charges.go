// Scalar resources (vCPU, memory, disk) as the node counters, pool
// rollups and quotas charge them: amounts in resource order, which is the
// lock order of those rows.

package commands

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// scalarAmounts is the spec's non-zero scalars in core.ScalarResources
// order (the lock order within a node's counters), each times sign.
func scalarAmounts(spec core.ReservationSpec, sign int64) ([]string, []int64) {
	var res []string
	var amounts []int64
	for _, r := range core.ScalarResources {
		if a := scalar(spec, r); a != 0 {
			res, amounts = append(res, r), append(amounts, sign*a)
		}
	}
	return res, amounts
}

// sortedAmounts is charges as parallel slices in resource order.
func sortedAmounts(charges map[string]int64) ([]string, []int64) {
	res := slices.Sorted(maps.Keys(charges))
	amounts := make([]int64, len(res))
	for i, r := range res {
		amounts[i] = charges[r]
	}
	return res, amounts
}

// firstMissing is the first resource of charges, in resource order, that a
// guarded statement did not return, or "".
func firstMissing(charges map[string]int64, done []string) string {
	for _, r := range slices.Sorted(maps.Keys(charges)) {
		if !slices.Contains(done, r) {
			return r
		}
	}
	return ""
}

// adjustRollup moves the pool rollup by the spec's scalars times sign.
func adjustRollup(ctx context.Context, q *db.Queries, poolID string, spec core.ReservationSpec, sign int64) error {
	scalars, deltas := scalarAmounts(spec, sign)
	if len(scalars) == 0 {
		return nil
	}
	done, err := q.PoolCapacityRollupAdjustMany(ctx, db.PoolCapacityRollupAdjustManyParams{PoolID: poolID,
		Resources: scalars, Deltas: deltas})
	if err != nil {
		return pg.Translate(err, "pool capacity")
	}
	for _, r := range scalars {
		if !slices.Contains(done, r) {
			return fmt.Errorf("pool %s capacity rollup for %s out of range: %w", poolID, r, errRollupDrift)
		}
	}
	return nil
}

var errRollupDrift = errors.New("rollup disagrees with node counters")

// scalar is the spec's amount of one scalar resource.
func scalar(spec core.ReservationSpec, resource string) int64 {
	switch resource {
	case core.ResourceVCPU:
		return spec.VCPU
	case core.ResourceMemory:
		return spec.MemoryMB
	case core.ResourceDisk:
		return spec.DiskGB
	}
	return 0
}
