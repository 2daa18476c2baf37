package agent

import (
	"context"
	"time"
)

// How a daemon stops. Stopped gracefully (SIGTERM, systemctl stop: Run's
// context ends) it leaves nothing running, and says so: it stops every
// workload, reports each stop on its session, and only then closes it.
// Killed, it leaves its workloads to its successor, which adopts them
// (instance_registry.go).

// reasonDaemonStopped is why a graceful stop stopped an instance.
const reasonDaemonStopped = "the node daemon stopped"

// shutdownReportTime is how long, past the stop grace, a stopping daemon
// keeps its session for the shutdown's reports: a daemon whose gateway is
// unreachable still exits then, and its next session's inventory (which no
// longer lists the instances) makes up for the reports.
const shutdownReportTime = 5 * time.Second

// stopGracefully is the daemon's graceful stop, once its run has ended:
// the shutdown, its reports on the session open now, then the session
// closed. endSessions ends the sessions' context; it is called after the
// stop grace and shutdownReportTime at the latest.
func (d *daemon) stopGracefully(endSessions context.CancelFunc) {
	deadline := time.AfterFunc(d.cfg.StopGrace+shutdownReportTime, endSessions)
	defer deadline.Stop()
	d.shutdown()
	d.closeSession()
	endSessions()
}

// shutdown stops every workload (SIGTERM, the grace period, then kill) and
// reports each stopped instance, deletes every container and unmounts
// every allocation's /work: a stopped daemon leaves nothing running, and
// nothing mounted, on the node. No workload starts once it has begun (an
// instance-start or exec job that arrives meanwhile fails). The
// allocations stay assigned, their files kept in their /work images: a
// daemon started again makes their containers anew, and mounts their
// /work again, at their next workload.
func (d *daemon) shutdown() {
	d.instances.refuseStarts()
	stopped := d.instances.stopWhere(d.cfg.StopGrace, true, func(_, _ string) string { return reasonDaemonStopped })
	d.reportStopped(stopped)
	for _, id := range d.sandbox.containers(context.Background()) {
		if err := d.sandbox.stop(context.Background(), id); err != nil {
			d.log.Error("stop a container at shutdown", "allocation", id, "err", err)
		}
	}
	d.sandbox.unmountWork(context.Background())
	if len(stopped) > 0 {
		d.log.Info("stopped the workloads at shutdown", "instances", len(stopped))
	}
}
