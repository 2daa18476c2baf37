package commands

import (
	"context"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// keyReusedFirst words refusal, a request's validation failing before its
// Idempotency-Key is claimed (nothing is stored for it), as
// IDEMPOTENCY_KEY_REUSED when the key already holds a different request.
// A reused key is the caller's first mistake: it retried with a request
// other than the one it keyed, and must hear that (422) rather than fix
// the body and have the key replay an answer to another request, or pick
// a fresh key for what was meant as a retry. The key is only read: nothing
// is claimed or stored, so the key keeps its answer.
func keyReusedFirst(ctx context.Context, h *Handlers, actor core.Actor, key, command string, request any, refusal error) error {
	if key == "" || core.CodeOf(refusal) != core.CodeInvalidArgument {
		return refusal
	}
	sum, err := requestHash(command, request)
	if err != nil {
		return refusal
	}
	held, err := db.New(h.Pool).IdempotencyKeyHeldHash(ctx, db.IdempotencyKeyHeldHashParams{
		TenantID: actor.Tenant, Identity: actor.Identity, Key: key})
	if err != nil {
		// A free key (no row), or one that cannot be read now: the
		// refusal stands, and says what is wrong with the request.
		return refusal
	}
	if string(held) != string(sum[:]) {
		return keyReused(key)
	}
	return refusal
}
