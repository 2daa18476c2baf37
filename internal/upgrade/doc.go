// Package upgrade holds the upgrade regression test: a database populated
// by an earlier release (testdata/), migrated by this code, must keep its
// data, its tokens and its reservations working, and pass `compute check`.
// The package has no code of its own; see upgrade_test.go.
package upgrade
