package pg

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// maxTxAttempts bounds how often a transaction that lost a race is re-run.
const maxTxAttempts = 4

// InTx runs fn in one transaction and commits it, or rolls it back when fn
// returns an error. A transaction that failed only because it lost a race
// (serialization failure or deadlock) is run again from the start, so fn must
// not have effects outside the transaction.
func InTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	var err error
	for attempt := 1; attempt <= maxTxAttempts; attempt++ {
		err = pgx.BeginFunc(ctx, pool, fn)
		if err == nil || !IsRetryable(err) {
			return err
		}
	}
	return fmt.Errorf("after %d attempts: %w", maxTxAttempts, err)
}
