package commands

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// A key stores only answers that ran to a decision: a lost race leaves the
// key free, so a retry with it runs again and can succeed; a decided error
// (validation, quota) is replayed without running again.
func TestIdempotencyStoresOnlyDecisions(t *testing.T) {
	d := pgtest.New(t)
	h := New(d.Pool, Config{})
	ctx := context.Background()
	actor := core.Actor{Tenant: "acme", Identity: "bob@acme", Role: core.RoleMember}

	lostRaces := map[string]error{
		"version guard":  zeroRowsConflict(0, nil, "reservation r1"),
		"exclusion":      core.Wrap(core.CodeConflict, &pgconn.PgError{Code: "23P01"}, "allocation conflicts with an existing one"),
		"serialization":  core.Wrap(core.CodeUnavailable, &pgconn.PgError{Code: "40001"}, "concurrent update, retry"),
		"lock timeout":   &pgconn.PgError{Code: "55P03"},
		"unavailable":    core.Errorf(core.CodeUnavailable, "database unavailable"),
		"internal":       errors.New("boom"),
		"context cancel": core.Wrap(core.CodeUnavailable, context.Canceled, "request cancelled or timed out"),
		// preempt's answer when a victim was extended since the plan was
		// read: withPreemption reads a new plan and runs again.
		"preemption lost": fmt.Errorf("%w: reservation r1: %w", errPreemptionLost,
			checkVersion(2, 3, "reservation r1")),
		"preemption lost, victim gone": fmt.Errorf("%w: reservation r1: %w", errPreemptionLost,
			core.Errorf(core.CodeNotFound, "reservation r1 not found")),
	}
	for name, first := range lostRaces {
		t.Run("retry after "+name, func(t *testing.T) {
			calls, failing := 0, true // InTx may itself retry a serialization failure
			run := func() (string, error) {
				return idempotent(ctx, h, actor, "k-"+name, "test.op", map[string]int{"n": 1},
					func(ctx context.Context, tx pgx.Tx) (string, error) {
						calls++
						if failing {
							return "", first
						}
						return "booked", nil
					})
			}
			_, err := run()
			require.Error(t, err)
			failing = false
			out, err := run()
			require.NoError(t, err, "a lost race must not be the key's final answer")
			require.Equal(t, "booked", out)
			n := calls
			out, err = run()
			require.NoError(t, err)
			require.Equal(t, "booked", out)
			require.Equal(t, n, calls, "the success is replayed")
		})
	}

	decided := map[string]error{
		"quota":      core.Errorf(core.CodeQuotaExceeded, "gpu quota exceeded"),
		"validation": core.Errorf(core.CodeInvalidArgument, "end before start"),
		"transition": core.Errorf(core.CodeConflict, "reservation r1 cannot go from released to released"),
	}
	for name, first := range decided {
		t.Run("replay "+name, func(t *testing.T) {
			calls := 0
			run := func() (string, error) {
				return idempotent(ctx, h, actor, "d-"+name, "test.op", map[string]int{"n": 1},
					func(ctx context.Context, tx pgx.Tx) (string, error) {
						calls++
						if calls == 1 {
							return "", first
						}
						return "booked", nil
					})
			}
			_, err := run()
			require.Equal(t, core.CodeOf(first), core.CodeOf(err))
			_, err = run()
			require.Equal(t, core.CodeOf(first), core.CodeOf(err), "a decision is replayed")
			require.Contains(t, err.Error(), publicMessage(first))
			require.Equal(t, 1, calls)
		})
	}
}

// A request that waits on a key while the key's first request fails with a
// decision replays that decision; it does not run the request itself. The
// first request stores its answer in its own transaction, under the claim,
// so no moment exists where the key is free and the answer unwritten: were
// there one, the waiter could run under a changed state and succeed where
// the first caller was refused, and the key would keep that success. Each
// case's decision comes from Go (a check on the results) or from a
// statement that failed and aborted the transaction.
func TestIdempotencyWaiterReplaysTheFirstRequestsDecision(t *testing.T) {
	d := pgtest.New(t)
	h := New(d.Pool, Config{})
	ctx := context.Background()
	actor := core.Actor{Tenant: "acme", Identity: "bob@acme", Role: core.RoleMember}

	decisions := map[string]struct {
		decide func(context.Context, pgx.Tx) error
		code   core.Code
	}{
		"checked in Go": {func(context.Context, pgx.Tx) error {
			return core.Errorf(core.CodeQuotaExceeded, "gpu quota exceeded")
		}, core.CodeQuotaExceeded},
		"a failed statement": {func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "DO $$ BEGIN RAISE unique_violation; END $$")
			require.Error(t, err)
			return pg.Translate(err, "site s1")
		}, core.CodeConflict},
	}
	for name, c := range decisions {
		t.Run(name, func(t *testing.T) {
			key := "k-" + name
			claimed, release := make(chan struct{}), make(chan struct{})
			var secondRan atomic.Bool
			firstErr := make(chan error, 1)
			go func() {
				_, err := idempotent(ctx, h, actor, key, "test.op", map[string]int{"n": 1},
					func(ctx context.Context, tx pgx.Tx) (string, error) {
						close(claimed)
						<-release // holds the claim until the waiter waits on it
						return "", c.decide(ctx, tx)
					})
				firstErr <- err
			}()
			<-claimed
			secondErr := make(chan error, 1)
			go func() {
				_, err := idempotent(ctx, h, actor, key, "test.op", map[string]int{"n": 1},
					func(context.Context, pgx.Tx) (string, error) {
						secondRan.Store(true)
						return "booked", nil
					})
				secondErr <- err
			}()
			d.WaitForLockWait(t) // the waiter, on the first request's claim
			close(release)

			err := <-firstErr
			require.Equal(t, c.code, core.CodeOf(err), "%v", err)
			err = <-secondErr
			require.Equal(t, c.code, core.CodeOf(err), "the waiter replays the decision: %v", err)
			require.False(t, secondRan.Load(), "the waiter did not run the request")
		})
	}
}
