package pgtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Plan is one node of EXPLAIN (ANALYZE, FORMAT JSON)'s plan, with the
// figures a test that holds a statement to the rows it reads needs.
type Plan struct {
	Relation string  `json:"Relation Name"`
	Rows     float64 `json:"Actual Rows"`
	Removed  float64 `json:"Rows Removed by Filter"`
	Loops    float64 `json:"Actual Loops"`
	// Hit and Read are the shared buffers the node and its children found
	// in memory and read in: an index scan whose condition is not on the
	// index's leading column reads the whole index and reports no row
	// removed, but its buffers show it.
	Hit   float64 `json:"Shared Hit Blocks"`
	Read  float64 `json:"Shared Read Blocks"`
	Plans []Plan  `json:"Plans"`
}

// BuffersRead is how many shared buffers the plan's scans of the table rel
// (its heap and its indexes) touched, in memory or read in.
func (p Plan) BuffersRead(rel string) int {
	n := 0
	if p.Relation == rel {
		n += int(p.Hit + p.Read)
	}
	for _, c := range p.Plans {
		n += c.BuffersRead(rel)
	}
	return n
}

// RowsReturned is how many rows the plan's scans of the table rel
// returned, over all its scans and loops.
func (p Plan) RowsReturned(rel string) int {
	return p.rows(rel, false)
}

// RowsRead is RowsReturned plus the rows their filters dropped: a seq scan
// counts the whole table.
func (p Plan) RowsRead(rel string) int {
	return p.rows(rel, true)
}

func (p Plan) rows(rel string, dropped bool) int {
	n := 0
	if p.Relation == rel {
		r := p.Rows
		if dropped {
			r += p.Removed
		}
		n += int(r * p.Loops)
	}
	for _, c := range p.Plans {
		n += c.rows(rel, dropped)
	}
	return n
}

// ExplainExecute runs the prepared statement name with args under EXPLAIN
// (ANALYZE, BUFFERS, FORMAT JSON) on conn, with whatever plan conn would use for it
// (its cached one, or as plan_cache_mode says), and returns the plan.
func ExplainExecute(ctx context.Context, conn interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, name string, args []any) (Plan, error) {
	params := make([]string, len(args))
	for i := range args {
		params[i] = fmt.Sprintf("$%d", i+1)
	}
	var out []byte
	err := conn.QueryRow(ctx, fmt.Sprintf("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE %q(%s)", name, strings.Join(params, ", ")),
		append([]any{pgx.QueryExecModeSimpleProtocol}, args...)...).Scan(&out)
	if err != nil {
		return Plan{}, err
	}
	var plan []struct{ Plan Plan }
	if err := json.Unmarshal(out, &plan); err != nil || len(plan) != 1 {
		return Plan{}, fmt.Errorf("EXPLAIN's plan %.200s: %v", out, err)
	}
	return plan[0].Plan, nil
}
