package commands

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// storedResponse is what an idempotency key replays: the first result that
// ran to a decision, errors included (Stripe's rule), so a retry sees what the
// first call saw.
type storedResponse struct {
	Result json.RawMessage `json:"result,omitempty"`
	Code   core.Code       `json:"code,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// storeOutcome is the one place that decides, per outcome, whether a key
// keeps the answer (docs/concepts/capacity.md#idempotency-keys-what-a-key-keeps
// has the table). A request that ran to a decision is stored and replayed: success, INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED,
// QUOTA_EXCEEDED and a CONFLICT the state decided (an illegal transition, an
// If-Match mismatch, a duplicate id). A request that lost a race or never
// finished is not: a version guard that matched no row, a serialization
// failure, deadlock, lock or statement timeout, an exclusion violation
// against a concurrent booking, UNAVAILABLE, RATE_LIMITED, INTERNAL and
// anything unclassified, and a preemption plan lost to a concurrent change
// of a victim. Nothing is stored for those, so the key stays free
// and a retry with it runs the request again.
func storeOutcome(err error) bool {
	if err == nil {
		return true
	}
	if lostRace(err) {
		return false
	}
	switch core.CodeOf(err) {
	case core.CodeInvalidArgument, core.CodeNotFound, core.CodePermissionDenied,
		core.CodeQuotaExceeded, core.CodeConflict:
		return true
	}
	return false
}

// lostRace reports a failure caused by a concurrent transaction rather than
// by the request: running it again may well succeed.
func lostRace(err error) bool {
	if errors.Is(err, errChangedConcurrently) || errors.Is(err, errKeyInFlight) {
		return true
	}
	// A preemption whose plan no longer held under its locks (a victim
	// extended, released or preempted since it was read) is run again with a
	// new plan: its CONFLICT or NOT_FOUND is about the victim, not this
	// request, and must not become the key's answer.
	if errors.Is(err, errPreemptionLost) {
		return true
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// The SQLSTATEs are classified in internal/pg: a serialization
	// failure or deadlock, a lock or statement timeout, and an exclusion
	// violation (a concurrent booking took the devices).
	return pg.IsRetryable(err) || pg.IsLockNotAvailable(err) || pg.IsQueryCanceled(err) ||
		pg.IsExclusionViolation(err)
}

// errKeyInFlight is the cause of the CONFLICT answered while another request
// with the same key is running.
var errKeyInFlight = errors.New("idempotency key in flight")

// idempotent runs fn in one transaction under an idempotency key scoped to
// (tenant, identity, key). An empty key runs fn plainly. A key seen before
// replays its stored response, or fails with IDEMPOTENCY_KEY_REUSED when the
// request differs. The key row is claimed first in fn's transaction, so a
// concurrent request with the same key waits for the first one and then
// replays it. Validation must happen before: nothing is stored for it, and
// its refusal goes through keyReusedFirst so that a reused key is told
// first.
func idempotent[T any](ctx context.Context, h *Handlers, actor core.Actor, key, command string, request any,
	fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	return idempotentWith(ctx, h, actor, key, command, request, nil, fn)
}

// idempotentWith is idempotent for a command that sends statements with
// its transaction's BEGIN (first, which may be nil; see pg.InTxBatch): the
// key's claim travels in that same round trip, ahead of them. When the key
// was taken, the transaction rolls back whatever first did and the stored
// answer is read after it.
func idempotentWith[T any](ctx context.Context, h *Handlers, actor core.Actor, key, command string, request any,
	first func(ctx context.Context, b *pg.Batch), fn func(ctx context.Context, tx pgx.Tx) (T, error)) (T, error) {
	var zero T
	queueFirst := func(b *pg.Batch) {
		if first != nil {
			first(ctx, b)
		}
	}
	if key == "" {
		var out T
		err := pg.InTxBatch(ctx, h.Pool, queueFirst, func(tx pgx.Tx) error {
			var err error
			out, err = fn(ctx, tx)
			return err
		})
		return out, pg.Translate(err, command)
	}
	sum, err := requestHash(command, request)
	if err != nil {
		return zero, err
	}
	ids := db.IdempotencyKeyGetParams{TenantID: actor.Tenant, Identity: actor.Identity, Key: key}

	var out T
	var claimed int64
	var stored bool // a decided error was stored in the request's own transaction
	runErr := pg.InTxBatch(ctx, h.Pool, func(b *pg.Batch) {
		stored = false
		queueClaim(ctx, h, b, ids, sum[:], &claimed)
		b.Statement("savepoint " + claimSavepoint)
		queueFirst(b)
	}, func(tx pgx.Tx) error {
		if claimed != 1 {
			return errKeyTaken
		}
		var err error
		out, err = fn(ctx, tx)
		if err != nil {
			stored = storeDecidedError(ctx, tx, ids, pg.Translate(err, command))
			return err
		}
		// The stored answer and the COMMIT in one round trip: nothing is
		// left to check once the answer is written.
		var b pg.Batch
		pg.ExecRows(ctx, &b, (*db.Queries).IdempotencyKeyComplete, completion(ids, storedResponse{Result: mustJSON(out)}), nil)
		b.Commit()
		return pg.Translate(b.Send(ctx, tx), "idempotency key")
	})
	// The first round trip's statements fail untranslated (nothing of the
	// command saw them): translate here, the one place they surface.
	runErr = pg.Translate(runErr, command)
	switch {
	case errors.Is(runErr, errKeyTaken):
		// The claim waited for the key's first request, which has
		// committed: its answer is there to read.
		replay, err := loadReplay(ctx, db.New(h.Pool), ids, sum[:])
		if err != nil {
			return zero, err
		}
		return decodeReplay[T](replay)
	case runErr != nil && storeOutcome(runErr) && !stored:
		// The request failed before its work ran (a statement sent with
		// BEGIN) or its transaction had already ended: the claim rolled
		// back with the work, so record the error in a transaction of its
		// own. A request that waited on the key may have run in between;
		// then the key keeps its answer and this one stores nothing.
		_ = pg.InTx(ctx, h.Pool, func(tx pgx.Tx) error {
			q := db.New(tx)
			if claimed, err := claimKey(ctx, h, q, ids, sum[:]); err != nil || !claimed {
				return err
			}
			return completeKey(ctx, q, ids, storedResponse{Code: core.CodeOf(runErr), Error: publicMessage(runErr)})
		})
		return zero, runErr
	case runErr != nil:
		return zero, runErr
	}
	return out, nil
}

// claimSavepoint is set right after a key's claim, so that a request that
// fails with a decided error can undo its work and keep the claim.
const claimSavepoint = "idempotency_claim"

// storeDecidedError stores err as the key's answer in the request's own
// transaction and commits it, when err is a decision (storeOutcome) and
// the transaction can still be rolled back to the claim: the work goes,
// the claim stays, and a request waiting on the key replays err instead of
// running the request again under a state that may have changed. The
// answer and the COMMIT go in one round trip after the rollback. It
// reports whether the answer was committed; when not, the caller rolls
// back.
func storeDecidedError(ctx context.Context, tx pgx.Tx, ids db.IdempotencyKeyGetParams, err error) bool {
	if !storeOutcome(err) {
		return false
	}
	switch tx.Conn().PgConn().TxStatus() {
	case 'T', 'E': // in the transaction, or in it after a failed statement
	default:
		return false
	}
	// The rollback goes first on its own: pgx prepares a batch's
	// statements before sending it, which an aborted transaction refuses.
	if _, err := tx.Exec(ctx, "rollback to savepoint "+claimSavepoint); err != nil {
		return false
	}
	var b pg.Batch
	pg.ExecRows(ctx, &b, (*db.Queries).IdempotencyKeyComplete,
		completion(ids, storedResponse{Code: core.CodeOf(err), Error: publicMessage(err)}), nil)
	b.Commit()
	return b.Send(ctx, tx) == nil
}

// requestHash is what a key keeps of its request: the command and the
// request as decoded, so the same request with other whitespace or field
// order is the same.
func requestHash(command string, request any) ([sha256.Size]byte, error) {
	body, err := json.Marshal(request)
	if err != nil {
		return [sha256.Size]byte{}, fmt.Errorf("%s: hash request: %w", command, err)
	}
	return sha256.Sum256(append([]byte(command+"\x00"), body...)), nil
}

// keyReused is the refusal of a key sent with another request than the
// one it holds.
func keyReused(key string) error {
	return core.Errorf(core.CodeIdempotencyKeyReused, "idempotency key %q was used with a different request", key)
}

// errKeyTaken rolls back a transaction whose key was claimed before: the
// stored answer is replayed instead.
var errKeyTaken = errors.New("idempotency key taken")

// queueClaim queues claimKey's two statements in b; *claimed is 1 when
// this request claimed the key.
func queueClaim(ctx context.Context, h *Handlers, b *pg.Batch, ids db.IdempotencyKeyGetParams, hash []byte, claimed *int64) {
	pg.ExecRows(ctx, b, (*db.Queries).IdempotencyKeyDeleteExpired, db.IdempotencyKeyDeleteExpiredParams(ids), nil)
	pg.ExecRows(ctx, b, (*db.Queries).IdempotencyKeyClaim, db.IdempotencyKeyClaimParams{
		TenantID: ids.TenantID, Identity: ids.Identity, Key: ids.Key, RequestHash: hash,
		TtlSeconds: h.idempotencyTTL().Seconds(),
	}, claimed)
}

func claimKey(ctx context.Context, h *Handlers, q *db.Queries, ids db.IdempotencyKeyGetParams, hash []byte) (bool, error) {
	if _, err := q.IdempotencyKeyDeleteExpired(ctx, db.IdempotencyKeyDeleteExpiredParams(ids)); err != nil {
		return false, pg.Translate(err, "idempotency key")
	}
	n, err := q.IdempotencyKeyClaim(ctx, db.IdempotencyKeyClaimParams{
		TenantID: ids.TenantID, Identity: ids.Identity, Key: ids.Key, RequestHash: hash,
		TtlSeconds: h.idempotencyTTL().Seconds(),
	})
	if err != nil {
		return false, pg.Translate(err, "idempotency key")
	}
	return n == 1, nil
}

func loadReplay(ctx context.Context, q *db.Queries, ids db.IdempotencyKeyGetParams, hash []byte) (*storedResponse, error) {
	row, err := q.IdempotencyKeyGet(ctx, ids)
	if err != nil {
		return nil, pg.Translate(err, "idempotency key")
	}
	if string(row.RequestHash) != string(hash) {
		return nil, keyReused(ids.Key)
	}
	if row.Response == nil {
		return nil, core.Wrap(core.CodeConflict, errKeyInFlight,
			fmt.Sprintf("a request with idempotency key %q is still in flight", ids.Key))
	}
	var r storedResponse
	if err := json.Unmarshal(row.Response, &r); err != nil {
		return nil, fmt.Errorf("decode stored response: %w", err)
	}
	return &r, nil
}

func completeKey(ctx context.Context, q *db.Queries, ids db.IdempotencyKeyGetParams, r storedResponse) error {
	_, err := q.IdempotencyKeyComplete(ctx, completion(ids, r))
	return pg.Translate(err, "idempotency key")
}

// completion is the statement that stores r as the key's answer.
func completion(ids db.IdempotencyKeyGetParams, r storedResponse) db.IdempotencyKeyCompleteParams {
	return db.IdempotencyKeyCompleteParams{TenantID: ids.TenantID, Identity: ids.Identity, Key: ids.Key, Response: mustJSON(r)}
}

func decodeReplay[T any](r *storedResponse) (T, error) {
	var out T
	if r.Code != "" {
		return out, core.Errorf(r.Code, "%s", r.Error)
	}
	if err := json.Unmarshal(r.Result, &out); err != nil {
		return out, fmt.Errorf("decode stored result: %w", err)
	}
	return out, nil
}

// publicMessage is the caller-safe message of a coded error.
func publicMessage(err error) string {
	var ce *core.Error
	if errors.As(err, &ce) {
		return ce.Message
	}
	return "internal error"
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("marshal %T: %v", v, err)) // results are plain structs
	}
	return b
}
