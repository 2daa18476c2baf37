package workqueue

import (
	"context"
	"errors"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// Completed is what a handler returns when it completed its own item, in
// its own transaction (CompleteIn): the worker then records nothing more.
// A handler whose work ends in one transaction anyway (a webhook delivery
// that succeeded) so saves the worker's completion transaction: its
// BEGIN, fence, delete and COMMIT.
//
// The handler's transaction must be fenced by it.Lease (Lease.Fence as its
// first statement) exactly as the worker's own would be, and must have
// committed: on any other outcome the handler returns something else (nil,
// Again, an error) and the worker records it as usual.
var Completed = errors.New("work item completed by its handler")

// CompleteIn queues in b the completion of it, to be sent in the
// handler's fenced transaction: the row is deleted if its gen is still
// the claimed one, else (the key was dirtied during the run) only its
// claim is released and the key runs again when its enqueue said, as the
// worker's own completion does. The claim is released first: that takes
// the row lock, so the delete then sees the gen a concurrent enqueue
// committed. A handler that sent it returns Completed once b's
// transaction has committed.
func CompleteIn(ctx context.Context, b *pg.Batch, it Item) {
	pg.ExecRows(ctx, b, (*db.Queries).WorkQueueUnclaim, db.WorkQueueUnclaimParams{Kind: it.Kind, Key: it.Key}, nil)
	pg.ExecRows(ctx, b, (*db.Queries).WorkQueueComplete, db.WorkQueueCompleteParams{Kind: it.Kind, Key: it.Key, Gen: it.Gen}, nil)
}
