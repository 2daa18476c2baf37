package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes of a work item, the outcome label of
// compute_workqueue_items_total.
const (
	// OutcomeDone: the handler succeeded and the row was completed.
	OutcomeDone = "done"
	// OutcomeAgain: the handler asked to run again later (workqueue.Again).
	OutcomeAgain = "again"
	// OutcomeFailed: the handler failed; the row is retried with back-off.
	OutcomeFailed = "failed"
	// OutcomeFenced: the worker lost the shard lease before recording the
	// outcome; the new holder runs the item again.
	OutcomeFenced = "fenced"
	// OutcomeError: recording the outcome failed (database error).
	OutcomeError = "error"
)

// Loops are the counters the background loops feed as they run, in this
// process: outbox batches per sink and work items per kind. A nil *Loops
// counts nothing, so a dispatcher or worker built without one (tests,
// tools) needs no check.
type Loops struct {
	batches      *prometheus.CounterVec
	events       *prometheus.CounterVec
	batchSeconds *prometheus.HistogramVec
	items        *prometheus.CounterVec
	itemSeconds  *prometheus.HistogramVec
	rejections   *prometheus.CounterVec
}

// loopBuckets reach past the webhook timeout (15 s by default): a work
// item can be a delivery that waited for a slow endpoint.
var loopBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// NewLoops registers the loop counters on reg (reusing them when another
// Loops registered them first) and returns them.
func NewLoops(reg prometheus.Registerer) *Loops {
	return &Loops{
		batches: registerOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameOutboxBatches,
			Help: "Outbox batches this process handed to a sink, by sink and result (ok, error).",
		}, []string{"sink", "result"})),
		events: registerOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameOutboxDispatchedEvents,
			Help: "Events this process delivered to a sink and saved the cursor after, by sink.",
		}, []string{"sink"})),
		batchSeconds: registerOrReuse(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameOutboxBatchDuration,
			Help:    "Time to read, deliver and save one outbox batch, by sink.",
			Buckets: loopBuckets,
		}, []string{"sink"})),
		items: registerOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameWorkQueueItems,
			Help: "Work items this process ran, by kind and outcome (done, again, failed, fenced, error).",
		}, []string{"kind", "outcome"})),
		itemSeconds: registerOrReuse(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    NameWorkQueueItemDuration,
			Help:    "Time to run one work item and record its outcome, by kind.",
			Buckets: loopBuckets,
		}, []string{"kind"})),
		rejections: registerOrReuse(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NamePlacementRejections,
			Help: "Nodes the placer turned down for a reservation in this process, by the filter that said no.",
		}, []string{"filter"})),
	}
}

// StartFilters makes the placement filters' counters exist at zero, so
// that a rate over them is defined before the first rejection.
func (l *Loops) StartFilters(filters ...string) {
	if l == nil {
		return
	}
	for _, f := range filters {
		l.rejections.WithLabelValues(f)
	}
}

// PlacementRejected counts one node the placer turned down, by filter.
func (l *Loops) PlacementRejected(filter string) {
	if l == nil {
		return
	}
	l.rejections.WithLabelValues(filter).Inc()
}

// SinkBatch counts one batch of events handed to sink, which took took;
// err is what the dispatcher returned for it.
func (l *Loops) SinkBatch(sink string, events int, took time.Duration, err error) {
	if l == nil {
		return
	}
	result := "ok"
	if err != nil {
		result = "error"
	} else {
		l.events.WithLabelValues(sink).Add(float64(events))
	}
	l.batches.WithLabelValues(sink, result).Inc()
	l.batchSeconds.WithLabelValues(sink).Observe(took.Seconds())
}

// WorkItem counts one work item of kind that ended with outcome (one of
// the Outcome constants) after took.
func (l *Loops) WorkItem(kind, outcome string, took time.Duration) {
	if l == nil {
		return
	}
	l.items.WithLabelValues(kind, outcome).Inc()
	l.itemSeconds.WithLabelValues(kind).Observe(took.Seconds())
}
