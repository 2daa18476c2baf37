package httpapi_test

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// dashboardFile is the Grafana dashboard of docs/operations.
const dashboardFile = "../docs/operations/grafana-dashboard.json"

// dashboardQueries walks the dashboard's JSON and returns every PromQL
// query in it: panel targets' expr and template variables' definition.
func dashboardQueries(v any) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && (k == "expr" || k == "definition") {
				out = append(out, s)
				continue
			}
			out = append(out, dashboardQueries(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, dashboardQueries(e)...)
		}
	}
	return out
}

// The dashboard is valid JSON, every panel queries the data source the
// user picks, and every metric a query names is one a compute process
// exports: renaming a metric without the dashboard fails here.
func TestGrafanaDashboardQueriesExportedMetrics(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var dash struct {
		UID    string           `json:"uid"`
		Title  string           `json:"title"`
		Panels []map[string]any `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &dash), "the dashboard is valid JSON")
	require.NotEmpty(t, dash.UID)
	require.NotEmpty(t, dash.Title)
	require.NotEmpty(t, dash.Panels)

	ids := map[float64]bool{}
	for _, p := range dash.Panels {
		id, _ := p["id"].(float64)
		require.False(t, ids[id], "panel id %v is unique", id)
		ids[id] = true
		if p["type"] == "row" {
			continue
		}
		ds, _ := p["datasource"].(map[string]any)
		require.Equal(t, "${datasource}", ds["uid"], "panel %q uses the picked data source", p["title"])
		require.NotEmpty(t, dashboardQueries(p), "panel %q queries something", p["title"])
	}

	var all any
	require.NoError(t, json.Unmarshal(raw, &all))
	queries := dashboardQueries(all)
	require.NotEmpty(t, queries)
	names := exported(t, setupObserved(t))
	metric := regexp.MustCompile(`\b(?:compute|go|process)_[a-zA-Z0-9_]+`)
	used := map[string]bool{}
	for _, q := range queries {
		found := metric.FindAllString(q, -1)
		require.NotEmpty(t, found, "query %q names a metric", q)
		for _, name := range found {
			require.True(t, names[name], "query %q uses %s, which the server does not export", q, name)
			used[name] = true
		}
	}
	// Every domain and loop metric has a panel.
	for _, name := range []string{
		"compute_build_info", "compute_outbox_head_seq", "compute_outbox_sink_lag_seconds", "compute_outbox_frontier_lag_seconds", "compute_outbox_sink_lag_events",
		"compute_workqueue_depth", "compute_workqueue_oldest_due_age_seconds", "compute_lease_held", "compute_lease_epoch",
		"compute_reservations", "compute_nodes", "compute_webhook_attempts_total", "compute_outbox_dispatched_events_total",
		"compute_outbox_batches_total", "compute_workqueue_items_total", "compute_http_requests_total",
	} {
		require.True(t, used[name], "the dashboard shows %s", name)
	}
}
