package pg

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

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
	if txTracking.Load() {
		leave := enterTx()
		defer leave()
	}
	var err error
	for attempt := 1; attempt <= maxTxAttempts; attempt++ {
		err = pgx.BeginFunc(ctx, pool, fn)
		if err == nil || !IsRetryable(err) {
			return err
		}
	}
	return fmt.Errorf("after %d attempts: %w", maxTxAttempts, err)
}

// Test hook: which goroutines are inside InTx. "Nothing external happens
// inside a transaction" (an open transaction holds pg_snapshot_xmin, and so
// every outbox reader, back), and code that talks to the network asks
// InsideTx to prove it. Tracking is off unless a test turns it on: it reads
// the goroutine's id from its stack on every InTx.
var (
	txTracking atomic.Bool
	txMu       sync.Mutex
	txDepth    = map[uint64]int{} // goroutine id → InTx calls open on it
)

// TrackTransactions turns the InsideTx test hook on or off for the process.
// Tests only: production code never turns it on, and InsideTx then always
// reports false.
func TrackTransactions(on bool) { txTracking.Store(on) }

// InsideTx reports whether the calling goroutine is running inside InTx
// (while TrackTransactions is on). A network write (a daemon's WebSocket)
// asserts that it is not. It sees the goroutine that runs fn, not
// goroutines fn starts.
func InsideTx() bool {
	if !txTracking.Load() {
		return false
	}
	id := goroutineID()
	txMu.Lock()
	defer txMu.Unlock()
	return txDepth[id] > 0
}

func enterTx() (leave func()) {
	id := goroutineID()
	txMu.Lock()
	txDepth[id]++
	txMu.Unlock()
	return func() {
		txMu.Lock()
		defer txMu.Unlock()
		if txDepth[id]--; txDepth[id] <= 0 {
			delete(txDepth, id)
		}
	}
}

// goroutineID is the calling goroutine's id, from the first line of its
// stack ("goroutine 42 [running]:").
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, _ := strconv.ParseUint(string(b), 10, 64)
	return id
}
