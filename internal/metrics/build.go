package metrics

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Build is what a binary knows of itself: its module version, the commit
// it was built from and the Go toolchain that built it.
type Build struct {
	// Version is the main module's version ("v1.4.0" for a tagged module
	// build), or "devel" for a build from a work tree.
	Version string
	// Commit is the VCS revision, with "-dirty" when the tree had local
	// changes, or "unknown" when the build recorded none (-buildvcs=false).
	Commit string
	// GoVersion is the toolchain ("go1.26.0").
	GoVersion string
}

// ReadBuild reads Build from the binary's embedded build information
// (runtime/debug.ReadBuildInfo).
func ReadBuild() Build {
	b := Build{Version: "devel", Commit: "unknown", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		b.Version = v
	}
	if bi.GoVersion != "" {
		b.GoVersion = bi.GoVersion
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.Commit != "unknown" {
		b.Commit += "-dirty"
	}
	return b
}

// BuildInfo is compute_build_info{version,commit,goversion}, always 1: the
// labels say which build a process runs (join it to other series with
// `* on(instance) group_left(version) compute_build_info`).
func BuildInfo(b Build) prometheus.Collector {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        NameBuildInfo,
		Help:        "The build this process runs: version, commit and Go version as labels; always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "commit": b.Commit, "goversion": b.GoVersion},
	})
	g.Set(1)
	return g
}
