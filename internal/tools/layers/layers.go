// Package layers holds the house's import rule: the packages form layers,
// lowest first, and a package imports only from its own layer or those
// below it. The table is the same as the one in docs/architecture.md; the
// test in this package checks every package of the module against it, so
// an upward import fails `make test` and is named.
package layers

import "strings"

// Table is the layers, lowest first. A package belongs to the first layer
// that lists it or a parent directory of it.
var Table = [][]string{
	{"core", "docs", "sql", "wire"}, // the domain, embedded data, the daemon protocol's messages
	{"internal"},                    // generated queries, PostgreSQL, leases, work queue, clock, config, authn, metrics, tracing
	{"placement"},                   // pure placement policy
	{"outbox"},                      // the event log
	{"commands"},                    // the only writer
	{"projections", "queries"},      // the read side
	{"gateway", "webhook", "billing", "eventstream", "agent", "torture"}, // delivery: daemons, webhooks, billing, SSE; the daemon itself; the torture run
	{"httpapi", "console", "client"},                                     // the HTTP API; the web console, which serves files and imports nothing of ours; the API's Go client, which imports nothing of ours either
	{"cmd", "chaos", "examples", "internal/tools"},                       // programs, fault tests, tools
}

// Of returns the layer of a package path relative to the module root ("",
// the root itself, is not a package here), or -1 when the table does not
// place it. The most specific entry wins, so internal/tools sits above
// internal.
func Of(rel string) int {
	best, bestLen := -1, -1
	for i, layer := range Table {
		for _, dir := range layer {
			if (rel == dir || strings.HasPrefix(rel, dir+"/")) && len(dir) > bestLen {
				best, bestLen = i, len(dir)
			}
		}
	}
	return best
}
