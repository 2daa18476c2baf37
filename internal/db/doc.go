// Package db holds the sqlc-generated queries (files ending in .gen.go, never
// edited by hand), the transaction helper and the one function that turns
// database errors into typed core errors.
package db
