// Package benchdb holds the sqlc-generated queries of cmd/compute-bench
// (from cmd/compute-bench/sql, on the schema in sql/migrations; files ending
// in .gen.go are never edited by hand). The service never imports it.
package benchdb
