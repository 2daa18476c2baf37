// Package upgrade holds the upgrade regression test: databases populated
// by earlier releases (testdata/), migrated by this code, must keep their
// data, their tokens, their reservations and their webhooks working, and
// pass `compute check`. The package has no code of its own; see
// upgrade_test.go, and releases_test.go for the releases and how to add one.
package upgrade
