package lease

import (
	"context"
	"time"
)

// settleTimeout bounds a lease write that runs on after its caller's
// context ended.
const settleTimeout = 5 * time.Second

// settled is the context a lease write runs under: once sent, the write is
// seen through rather than abandoned when ctx ends. pgx abandons a
// cancelled statement by closing its connection, and the server may still
// run it afterwards — after the holder's Release on another connection,
// taking back for a whole TTL the lease the holder had just given up, so
// that no other process could take over at once. A ctx already done sends
// nothing: the caller gets its error.
func settled(ctx context.Context) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return ctx, func() {}, err
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	return sctx, cancel, nil
}
