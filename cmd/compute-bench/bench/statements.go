package bench

import (
	"context"
	"strings"
)

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

// StatementCost is one statement's share of the server's execution time
// over a load run, from pg_stat_statements: what the write path's
// PostgreSQL time is spent on.
type StatementCost struct {
	Name        string  `json:"name"` // sqlc's query name, or the statement's first line
	Calls       int64   `json:"calls"`
	TotalMs     float64 `json:"totalMs"`
	MeanMs      float64 `json:"meanMs"`
	ShareOfExec float64 `json:"shareOfExecTime"`
}

// topStatements lists the statements of this database by execution time
// since statementsReset, most expensive first.
func (e *appEnv) topStatements(ctx context.Context, ok bool, n int) []StatementCost {
	if !ok {
		return nil
	}
	rows, err := e.pool.Query(ctx, `SELECT query, calls, total_exec_time,
	       total_exec_time / nullif(sum(total_exec_time) OVER (), 0)
	  FROM pg_stat_statements
	 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
	 ORDER BY total_exec_time DESC LIMIT $1`, n)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var out []StatementCost
	for rows.Next() {
		var c StatementCost
		var query string
		var share *float64
		if rows.Scan(&query, &c.Calls, &c.TotalMs, &share) != nil {
			return out
		}
		c.Name = statementName(query)
		if c.Calls > 0 {
			c.MeanMs = c.TotalMs / float64(c.Calls)
		}
		if share != nil {
			c.ShareOfExec = *share
		}
		out = append(out, c)
	}
	return out
}

// statementName is the sqlc name of a query ("-- name: X :one"), or its
// first line.
func statementName(query string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(query), "\n")
	if rest, ok := strings.CutPrefix(line, "-- name: "); ok {
		name, _, _ := strings.Cut(rest, " ")
		return name
	}
	if len(line) > 40 {
		line = line[:40] + "…"
	}
	return line
}
