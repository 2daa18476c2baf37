// Package pgbouncersuites runs the integration and torture suites of other
// packages with every test connection going through PgBouncer in
// transaction pooling mode. It is a package of its own, not part of
// package chaos, so that `go test ./...` runs it beside the fault tests
// rather than after them: it takes about three minutes, most of it the
// suites it starts, and the fault tests' own real waits take seven.
package pgbouncersuites
