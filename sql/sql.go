// Package sql embeds the schema migrations so that the binary carries them:
// `compute serve` and `compute migrate` apply them, and the test template
// database is built from the same files.
package sql

import "embed"

// Migrations holds sql/migrations/NNNN_name.sql in goose format.
//
//go:embed migrations/*.sql
var Migrations embed.FS
