// Package layers holds the house's import rule: the packages form layers,
// lowest first, and a package imports only from its own layer or those
// below it. The table is the same as the one in docs/architecture.md; the
// test in this package checks every package of the module against it, so
// an upward import fails `make test` and is named. Closed names the
// packages that are contracts of their own (the Go client, the console),
// which import nothing else of the module whatever their layer, the
// examples, which import only the client, and the command line's package
// (cmd/compute/cli), which imports only the client and core. Barred names imports a package
// may not make although its layer is above them: the HTTP layer, the
// console, the client and main never import the generated queries.
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
	{"gateway", "webhook", "billing", "eventstream", "natsink", "agent", "torture"}, // delivery: daemons, webhooks, billing, SSE, NATS JetStream; the daemon itself; the torture run
	{"httpapi", "console", "client"},                                                // the HTTP API; the web console, which serves files and imports nothing of ours; the API's Go client, which imports nothing of ours either
	{"cmd", "chaos", "examples", "devtools"},                                        // programs, fault tests, development tools
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
	// The command line of the compute binary: its client commands reach
	// the server over the API only, so none can touch the database behind
	// the API's checks. What needs the server's packages (the server
	// commands, tokens create --database) package main hands it. core, the
	// domain's vocabulary, only gives the exit code of the error
	// --database returns.
	{Dir: "cmd/compute/cli", May: []string{"client", "core"}, Tests: true,
		Why: "the command line talks to the server through client; main hands it what needs the server"},
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

// Bar is an import some packages may not make although their layer is
// above it.
type Bar struct {
	Dirs   []string // the packages (and their subpackages) barred
	Import string   // the package (and its subpackages) they may not import
	Tests  bool     // their test files are barred too
	Why    string
}

// Barred are those imports: the HTTP layer, the console and main call
// commands and queries and never touch a table themselves, so generated
// rows and SQLSTATEs stay in the packages that own the tables.
var Barred = []Bar{
	{Dirs: []string{"httpapi", "console", "client", "cmd/compute"}, Import: "internal/db", Tests: true,
		Why: "they call commands and queries; rows and SQLSTATEs stay in the packages that own the tables"},
}

// BarsOf returns the bars a package path (relative to the module root)
// falls under.
func BarsOf(rel string) []Bar {
	var out []Bar
	for _, b := range Barred {
		for _, d := range b.Dirs {
			if under(rel, d) {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

// under reports whether rel is dir or a package below it.
func under(rel, dir string) bool { return rel == dir || strings.HasPrefix(rel, dir+"/") }
