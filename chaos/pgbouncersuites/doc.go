// Package pgbouncersuites runs the integration and torture suites of other
// packages with every test connection going through PgBouncer in
// transaction pooling mode. It is a package of its own, not part of
// package chaos, so that `go test ./...` runs it beside the fault tests
// rather than after them: it takes three to four minutes, most of it the
// suites it starts, and the fault tests' real waits take five more.
package pgbouncersuites
