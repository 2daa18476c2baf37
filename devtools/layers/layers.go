// Package layers holds the house's import rule: the packages form layers,
// lowest first, and a package imports only from its own layer or those
// below it. The table is the same as the one in docs/architecture.md; the
// test in this package checks every package of the module against it, so
// an upward import fails `make test` and is named. Closed names the
// packages that are contracts of their own (the Go client, the console),
// which import nothing else of the module whatever their layer, and the
// examples, which import only the client.
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
	{"cmd", "chaos", "examples", "devtools"},                             // programs, fault tests, development tools
}

// Of returns the layer of a package path relative to the module root ("",
// the root itself, is not a package here), or -1 when the table does not
// place it. The most specific entry wins, so a directory listed inside
// another listed one sits in its own layer.
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

// Closure is a package that is a contract of its own: it (and every package
// under it) may import, of this module, only itself and the packages named
// in May. Tests set means its test files are held to the same rule, so that
// the package and its tests build with nothing else of the module, as if it
// were a module apart.
type Closure struct {
	Dir   string
	May   []string
	Tests bool
	Why   string
}

// Closed are the packages that import nothing of the server, whatever their
// layer would allow. The layer table says what sits below what; these say
// what a user links.
var Closed = []Closure{
	{Dir: "client", Tests: true, Why: "the API's Go client: a program that uses it links no server code"},
	{Dir: "console", Tests: true, Why: "the web console: embedded files that read the public API from the browser"},
	// What users copy: the public client and nothing of the server. Their
	// tests may drive the server to prove the example works against it.
	{Dir: "examples", May: []string{"client"}, Why: "examples are copied into programs that link no server code"},
}

// ClosureOf returns the closure rule a package path (relative to the
// module root) falls under, or nil when none does.
func ClosureOf(rel string) *Closure {
	for i, c := range Closed {
		if rel == c.Dir || strings.HasPrefix(rel, c.Dir+"/") {
			return &Closed[i]
		}
	}
	return nil
}

// Allows reports whether a package under c may import the module package
// to (relative to the module root).
func (c *Closure) Allows(to string) bool {
	for _, dir := range append([]string{c.Dir}, c.May...) {
		if to == dir || strings.HasPrefix(to, dir+"/") {
			return true
		}
	}
	return false
}
