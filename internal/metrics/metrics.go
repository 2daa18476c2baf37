// Package metrics holds the control plane's Prometheus metrics beyond the
// HTTP ones of httpapi: the domain gauges read from the database when
// /metrics is scraped (Domain: outbox lag per sink and of the frontier, work-queue depth and
// age, lease holders, reservations and nodes by state, webhook attempts by
// outcome), the counters the background loops feed as they run (Loops:
// outbox batches, work items), and compute_build_info.
//
// Every name here is part of the operations contract: the Grafana
// dashboard (docs/operations/grafana-dashboard.json) and alerts query
// them, and docs/operations/observability.md describes each. A test checks
// that the dashboard queries only names the server exports.
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Metric names (see docs/operations/observability.md).
const (
	NameBuildInfo = "compute_build_info"

	NameOutboxHeadTxID         = "compute_outbox_head_txid"
	NameOutboxHeadSeq          = "compute_outbox_head_seq"
	NameOutboxHeadAge          = "compute_outbox_head_age_seconds"
	NameOutboxSinkLagEvents    = "compute_outbox_sink_lag_events"
	NameOutboxSinkLagSeconds   = "compute_outbox_sink_lag_seconds"
	NameOutboxFrontierLag      = "compute_outbox_frontier_lag_seconds"
	NameWorkQueueDepth         = "compute_workqueue_depth"
	NameWorkQueueOldestDueAge  = "compute_workqueue_oldest_due_age_seconds"
	NameLeaseHeld              = "compute_lease_held"
	NameLeaseEpoch             = "compute_lease_epoch"
	NameReservations           = "compute_reservations"
	NameNodes                  = "compute_nodes"
	NameWebhookAttempts        = "compute_webhook_attempts_total"
	NameDomainRefreshErrors    = "compute_domain_metrics_refresh_errors_total"
	NameDomainRefreshSeconds   = "compute_domain_metrics_refresh_seconds"
	NameOutboxBatches          = "compute_outbox_batches_total"
	NameOutboxDispatchedEvents = "compute_outbox_dispatched_events_total"
	NameOutboxBatchDuration    = "compute_outbox_batch_duration_seconds"
	NameWorkQueueItems         = "compute_workqueue_items_total"
	NameWorkQueueItemDuration  = "compute_workqueue_item_duration_seconds"
	NamePlacementRejections    = "compute_placement_rejections_total"
	NameGatewaySessions        = "compute_gateway_sessions"
	NameGatewaySessionsOpened  = "compute_gateway_sessions_opened_total"
	NameGatewayClockSkewed     = "compute_gateway_sessions_clock_skewed_total"
	NameNATSConnected          = "compute_nats_connected"
	NameNATSStreamAheadOfLog   = "compute_nats_stream_ahead_of_log"
	NameReadReplicaLag         = "compute_read_replica_lag_seconds"
	NameReadReplicaInRotation  = "compute_read_replica_in_rotation"
)

// NewRegistry returns the registry a compute process serves on /metrics,
// with the Go runtime and process collectors and compute_build_info of b.
// main adds a Domain and the Loops; httpapi adds its HTTP metrics.
func NewRegistry(b Build) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		BuildInfo(b),
	)
	return reg
}

// registerOrReuse registers c, or returns the identical collector already
// registered, so two loops built on one registry share their metrics.
func registerOrReuse[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}
