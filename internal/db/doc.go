// Package db holds only the sqlc-generated queries (files ending in .gen.go,
// never edited by hand; `make generate` writes them from sql/queries).
// Connecting, transactions and error mapping live in internal/pg.
package db
