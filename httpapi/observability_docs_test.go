package httpapi_test

import (
	"bufio"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/metrics"
)

// observabilityDoc describes every metric to the operator.
const observabilityDoc = "../docs/operations/observability.md"

// onlyInSomeProcesses are the documented metrics a plain API process does
// not export (the observed test server is one), and why.
var onlyInSomeProcesses = map[string]string{
	"compute_router_handler_execution_time_seconds": "a process running a watermill Router (the JetStream sink)",
	"compute_router_publish_time_seconds":           "a process running a watermill Router (the JetStream sink)",
	"compute_nats_connected":                        "a dispatcher with COMPUTE_NATS_URL",
	"compute_nats_stream_ahead_of_log":              "a dispatcher with COMPUTE_NATS_URL",
	"compute_read_replica_lag_seconds":              "an api process with COMPUTE_READ_DATABASE_URL",
	"compute_read_replica_in_rotation":              "an api process with COMPUTE_READ_DATABASE_URL",
	"compute_gateway_sessions":                      "a process with the gateway role",
	"compute_gateway_sessions_opened_total":         "a process with the gateway role",
	"compute_gateway_sessions_clock_skewed_total":   "a process with the gateway role",
}

// family is a metric as documented or as served: its type and the names
// of its labels (a histogram's le left out), sorted.
type family struct {
	kind   string
	labels string
}

var (
	docMetricRow = regexp.MustCompile("^\\| `(compute_[a-z0-9_]+)` \\|([^|]*)\\| (.*) \\|$")
	docLabelName = regexp.MustCompile("`([a-z_]+)`")
	docBuildInfo = regexp.MustCompile("`(compute_build_info)\\{([a-z,]+)\\}`")
	descLabels   = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
)

// documentedFamilies reads the metric tables of observabilityDoc: a
// counter's name ends in _total, a histogram's description starts with
// "Histogram", anything else is a gauge.
func documentedFamilies(t *testing.T) map[string]family {
	t.Helper()
	raw, err := os.ReadFile(observabilityDoc)
	require.NoError(t, err)
	out := map[string]family{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		m := docMetricRow.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		kind := "gauge"
		switch {
		case strings.HasSuffix(m[1], "_total"):
			kind = "counter"
		case strings.HasPrefix(m[3], "Histogram"):
			kind = "histogram"
		}
		var labels []string
		for _, l := range docLabelName.FindAllStringSubmatch(m[2], -1) {
			labels = append(labels, l[1])
		}
		_, dup := out[m[1]]
		require.False(t, dup, "%s is documented once", m[1])
		out[m[1]] = family{kind: kind, labels: sortedJoin(labels)}
	}
	b := docBuildInfo.FindStringSubmatch(string(raw))
	require.NotNil(t, b, "the doc describes compute_build_info")
	out[b[1]] = family{kind: "gauge", labels: sortedJoin(strings.Split(b[2], ","))}
	return out
}

func sortedJoin(labels []string) string {
	s := append([]string(nil), labels...)
	sort.Strings(s)
	return strings.Join(s, ",")
}

// servedFamilies scrapes /metrics as a scraper would and returns every
// compute_ family with its type and label names. A family whose series
// the fleet has no rows for yet (leases, work) takes its labels from the
// domain collector's description.
func servedFamilies(t *testing.T, o *observed) map[string]family {
	t.Helper()
	r := o.call(t, http.MethodGet, "/metrics", o.operator, nil)
	require.Equal(t, http.StatusOK, r.status)
	kinds := map[string]string{}
	labels := map[string]map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(r.body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			kinds[f[2]] = f[3]
			labels[f[2]] = map[string]bool{}
			continue
		}
		m := seriesLine.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(line, "#") {
			continue
		}
		name := m[1]
		if _, ok := kinds[name]; !ok {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base := strings.TrimSuffix(name, suffix); base != name && kinds[base] == "histogram" {
					name = base
				}
			}
		}
		for _, p := range labelPair.FindAllStringSubmatch(m[3], -1) {
			if p[1] != "le" {
				labels[name][p[1]] = true
			}
		}
	}
	require.NoError(t, sc.Err())

	descs := make(chan *prometheus.Desc, 64)
	metrics.NewDomain(o.pg.Pool, metrics.DomainOptions{}).Describe(descs)
	close(descs)
	described := map[string]string{}
	for d := range descs {
		m := descLabels.FindStringSubmatch(d.String())
		require.NotNil(t, m, d.String())
		described[m[1]] = m[2]
	}

	out := map[string]family{}
	for name, kind := range kinds {
		if !strings.HasPrefix(name, "compute_") {
			continue
		}
		var names []string
		for l := range labels[name] {
			names = append(names, l)
		}
		f := family{kind: kind, labels: sortedJoin(names)}
		if len(names) == 0 && described[name] != "" {
			f.labels = sortedJoin(strings.Split(described[name], ","))
		}
		out[name] = f
	}
	for name, ls := range described {
		if _, ok := out[name]; !ok { // no rows yet: not in the scrape
			out[name] = family{kind: "gauge", labels: sortedJoin(strings.Split(ls, ","))}
		}
	}
	return out
}

// Every metric docs/operations/observability.md describes is served with
// the type and labels it says (or is one a plain API process does not run),
// and every compute_ metric served is described there: an alert or a
// dashboard written from the doc queries what the server exports.
func TestObservabilityDocDescribesTheMetricsServed(t *testing.T) {
	t.Parallel()
	o := setupObserved(t)
	o.reserve(t)
	o.loops.SinkBatch("webhooks", 1, time.Millisecond, nil)
	o.loops.WorkItem("webhook.deliver", metrics.OutcomeDone, time.Millisecond)
	o.loops.PlacementRejected("cordoned")

	documented := documentedFamilies(t)
	served := servedFamilies(t, o)
	for name, want := range documented {
		got, ok := served[name]
		if !ok {
			require.Contains(t, onlyInSomeProcesses, name, "%s is documented but not served", name)
			continue
		}
		require.Equal(t, want, got, "%s: documented type and labels {kind labels}, then served", name)
	}
	for name := range served {
		require.Contains(t, documented, name, "%s is served but %s does not describe it", name, observabilityDoc)
	}
	for name := range onlyInSomeProcesses {
		require.Contains(t, documented, name)
	}
}
