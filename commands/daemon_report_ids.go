package commands

import "github.com/bettercompute/compute/core"

// maxReportedIDBytes is longer than any id the control plane gives a job,
// an instance or an allocation.
const maxReportedIDBytes = 128

// reportedID refuses an id a daemon's report names (a job, an instance,
// an allocation) that no object can have: longer than maxReportedIDBytes,
// or not printable UTF-8. Such an id would otherwise reach a query (a NUL
// is an error there) and, whole, every error message and log line about
// the report: a daemon's message may be 4 MiB.
func reportedID(what, id string) error {
	if len(id) > maxReportedIDBytes || !core.Printable(id) {
		return core.Errorf(core.CodeInvalidArgument, "%q is not a%s id", core.Clip(id, 64), what)
	}
	return nil
}
