package commands

import (
	"fmt"
	"strings"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// A reported GPU that disagrees with its record is a mismatch, not an
// overwrite: the record stays and the node's GPUMismatch condition says
// how they differ, so that an operator decides (quarantine, set the mode,
// or re-register) rather than a daemon's report changing what tenants
// booked.

// MemoryTolerance is how far a reported GPU memory may be from the record
// without being a mismatch, as a fraction of the record: drivers report a
// little less than the marketing size (an H100 80GB shows 81559 MiB).
const MemoryTolerance = 0.05

// MismatchMaxBytes bounds the GPUMismatch condition's message, which
// lists what a daemon reported: every version of the node and every event
// carries it.
const MismatchMaxBytes = 4096

// gpuMismatch says how a reported GPU differs from its record, "" if it
// does not.
func gpuMismatch(g db.DeviceListNodeGPUsForUpdateRow, r ReportedGPU) string {
	var diffs []string
	if r.Model != g.Model {
		diffs = append(diffs, fmt.Sprintf("model %q (recorded %q)", core.Clip(r.Model, 64), g.Model))
	}
	if d := r.MemoryMB - g.MemoryMb; float64(max(d, -d)) > MemoryTolerance*float64(g.MemoryMb) {
		diffs = append(diffs, fmt.Sprintf("memory %d MiB (recorded %d MiB)", r.MemoryMB, g.MemoryMb))
	}
	// A GPU in MIG mode cannot run a workload on the whole GPU: one shared
	// as a whole GPU or in slots would give its tenants a device they
	// cannot use. (The other way round cannot be told: fake GPUs report
	// no MIG mode at all.)
	if mode := core.GPUMode(derefString(g.Mode)); r.MIGEnabled && mode != core.GPUMIG {
		diffs = append(diffs, fmt.Sprintf("MIG mode enabled (recorded mode %s)", mode))
	}
	// A MIG layout recorded before its GPU's support was known (an
	// operator's, or one older than the check) offers tenants instances
	// the GPU cannot make.
	if mode := core.GPUMode(derefString(g.Mode)); r.MIGCapable != nil && !*r.MIGCapable && mode == core.GPUMIG {
		diffs = append(diffs, "no MIG support (recorded mode mig)")
	}
	if len(diffs) == 0 {
		return ""
	}
	return g.ID + " reported with " + strings.Join(diffs, " and ")
}
