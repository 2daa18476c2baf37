// Command checksqlnow fails when SQL reads the database's real clock.
//
// Every time comparison in SQL must go through compute_now(), which is
// defined once, in sql/migrations/0001_clock.sql. Tests replace it with a
// simulated clock so that expiry, leases and schedules can be driven
// deterministically; a query that calls now() (or CURRENT_TIMESTAMP,
// LOCALTIMESTAMP, transaction_timestamp(), statement_timestamp(),
// clock_timestamp()) directly would quietly bypass that clock, pass or fail
// by wall-clock luck, and in production let whichever gateway or process
// happened to run the query act as the authority on time. This tool makes
// such a read impossible to merge.
//
// It checks every line of *.sql files and the string literals of *.go files
// under root (default "."), skipping .git, .compute, node_modules, vendor and
// testdata directories. The clock migration itself is exempt, as is any line
// carrying the marker "check-sql-now: allow".
//
// Usage:
//
//	go run ./devtools/checksqlnow [root]
//
// Each finding is printed to stderr as
//
//	path:line: forbidden clock "now()" — use compute_now(): <line>
//
// and the exit status is 1 if there were any, 2 if the tree could not be
// read or the arguments are wrong, and 0 (with no output) if it is clean.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

// run is main without the process exit, so the exit status and report
// format can be tested.
func run(args []string, stderr io.Writer) int {
	root := "."
	switch len(args) {
	case 0:
	case 1:
		root = args[0]
	default:
		fmt.Fprintln(stderr, "usage: checksqlnow [root]")
		return 2
	}
	findings, err := Check(root)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	for _, f := range findings {
		// Join with root so the path opens from the caller's directory.
		path := filepath.Join(root, filepath.FromSlash(f.Path))
		fmt.Fprintf(stderr, "%s:%d: forbidden clock %q — use compute_now(): %s\n", path, f.Line, f.Match, f.Text)
	}
	if len(findings) > 0 {
		return 1
	}
	return 0
}
