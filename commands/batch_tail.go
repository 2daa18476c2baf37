package commands

import (
	"context"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
	"github.com/bettercompute/compute/internal/workqueue"
	"github.com/bettercompute/compute/outbox"
)

// batchTail gathers what the steps of a command's last batch append: their
// events and wake-ups, which go out at the batch's end as one statement
// each (outbox.AppendAllIn, workqueue.EnqueueAllIn) instead of one per
// step. Events keep the order they were emitted in.
type batchTail struct {
	events []core.Event
	pos    []*outbox.Position
	wakes  []workqueue.Wake
}

// emit adds an event; *pos, when pos is not nil, receives its position
// once the batch is sent.
func (t *batchTail) emit(typ, tenant, subject string, data any, pos *outbox.Position) error {
	ev, err := core.NewEvent(typ, tenant, subject, data)
	if err != nil {
		return err
	}
	t.events, t.pos = append(t.events, ev), append(t.pos, pos)
	return nil
}

// wake adds wake-ups.
func (t *batchTail) wake(w ...workqueue.Wake) { t.wakes = append(t.wakes, w...) }

// queue queues the events, then the wake-ups, in b, and empties t.
func (t *batchTail) queue(ctx context.Context, b *pg.Batch) {
	outbox.AppendAllIn(ctx, b, t.events, t.pos)
	workqueue.EnqueueAllIn(ctx, b, t.wakes...)
	*t = batchTail{}
}

// empty says whether t holds nothing to queue.
func (t *batchTail) empty() bool { return len(t.events) == 0 && len(t.wakes) == 0 }
