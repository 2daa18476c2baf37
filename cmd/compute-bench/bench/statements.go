package bench

import "context"

// pg_stat_statements is an extension sqlc does not know, so these two
// statements are written here rather than in cmd/compute-bench/sql. They
// check the tracer's statement counts from the server's side: the calls
// recorded in the load's database over a run, divided by what was booked.

// statementsReset creates the extension when the server preloads it and
// forgets the statements recorded so far in this database. It reports
// whether the count can be read afterwards.
func (e *appEnv) statementsReset(ctx context.Context) bool {
	if _, err := e.pool.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		return false
	}
	_, err := e.pool.Exec(ctx, `SELECT pg_stat_statements_reset(0, (SELECT oid FROM pg_database
	  WHERE datname = current_database()), 0)`)
	return err == nil
}

// statementsCalls is the number of statements executed in this database
// since statementsReset (BEGIN, COMMIT and savepoints included, as the
// tracer counts them; failed statements are not recorded).
func (e *appEnv) statementsCalls(ctx context.Context, ok bool) (int64, bool) {
	if !ok {
		return 0, false
	}
	var n int64
	err := e.pool.QueryRow(ctx, `SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements
	  WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n)
	return n, err == nil
}
