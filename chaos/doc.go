// Package chaos holds the fault tests of the control plane: they build the
// real `compute` binary, run it as separate processes against a private,
// durable PostgreSQL (fsync on), and break things from outside — SIGKILL the
// server, terminate its database sessions, crash PostgreSQL, hold a
// transaction open, put PgBouncer in front, split roles over several
// processes — while a steady load of reservations and webhook deliveries
// runs. Afterwards they audit the database and the webhook receiver: every
// acknowledged write is there, every event is in the outbox and reached the
// receiver, nothing took effect twice, and the capacity invariants hold.
//
// The harness lives in the _test files, so the audits may use hand-written
// SQL against the database under test; the service itself only ever runs
// sqlc queries. `go test ./chaos/` runs the CI-size versions (a minute or
// two); COMPUTE_CHAOS=full runs the long ones; -short skips them all.
// docs/reliability.md records the figures and the commands behind them.
package chaos
