// Package pg is the service's PostgreSQL plumbing around the generated
// queries of internal/db: Connect opens the pool, InTx runs a transaction
// (re-running one that lost a race), and Translate is the one place
// database errors become typed core errors. Its subpackages start a private
// server (cluster), apply the migrations (migrate) and make per-test
// databases (pgtest).
package pg
