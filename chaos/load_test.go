package chaos

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
)

const (
	// retryBackoff paces retries of one request while the server or the
	// database is down: a deliberate rate limit, not a wait for an event.
	retryBackoff = 100 * time.Millisecond
	// retryFor is how long one request is retried before the load gives
	// up on it (and counts it unacknowledged). It outlasts the longest
	// outage a test causes.
	retryFor = 90 * time.Second
)

// reservationJSON is the part of a reservation answer the audit needs.
type reservationJSON struct {
	ID      string `json:"id"`
	State   string `json:"state"`
	Version int64  `json:"version"`
}

// ack is the latest acknowledged (2xx) state of a reservation.
type ack struct {
	State   string
	Version int64
}

// ledger records every acknowledged write: the audit checks the database
// against it. A write the client never saw acknowledged may or may not have
// committed; only acknowledged ones are promises.
type ledger struct {
	mu          sync.Mutex
	acked       map[string]ack    // reservation id → latest acknowledged state
	byKey       map[string]string // idempotency key → reservation id it answered with
	keyMismatch int               // a retried key answered with another id: a double booking
	gaveUp      int               // create keys abandoned without an answer
	commits     []time.Time       // when each 2xx write was acknowledged
	retries     atomic.Int64      // attempts that failed and were retried
	releaseConf atomic.Int64      // releases answered 409 (an earlier attempt had committed)
}

func newLedger() *ledger {
	return &ledger{acked: map[string]ack{}, byKey: map[string]string{}}
}

func (l *ledger) record(key string, r reservationJSON) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if key != "" {
		if prev, ok := l.byKey[key]; ok && prev != r.ID {
			l.keyMismatch++
		}
		l.byKey[key] = r.ID
	}
	if cur, ok := l.acked[r.ID]; !ok || r.Version >= cur.Version {
		l.acked[r.ID] = ack{State: r.State, Version: r.Version}
	}
	l.commits = append(l.commits, time.Now())
}

// commitsBetween counts acknowledged writes in [from, to).
func (l *ledger) commitsBetween(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.commits {
		if !c.Before(from) && c.Before(to) {
			n++
		}
	}
	return n
}

// firstCommitAfter is how long after t the first write was acknowledged
// (-1 if none was).
func (l *ledger) firstCommitAfter(t time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	best := time.Duration(-1)
	for _, c := range l.commits {
		if d := c.Sub(t); d >= 0 && (best < 0 || d < best) {
			best = d
		}
	}
	return best
}

// load is a steady stream of create-then-release pairs from workers
// goroutines, spread over the API URLs. Creates carry an Idempotency-Key
// and are retried with the same key until answered, so a create that
// committed before a crash is answered by its stored response, not booked
// again.
type load struct {
	cl         *client
	bases      []string
	led        *ledger
	start, end time.Time // the reservation window: all overlap, so capacity matters
	next       atomic.Uint64
}

func newLoad(cl *client, led *ledger, bases ...string) *load {
	start := time.Now().UTC().Truncate(time.Minute).Add(time.Hour)
	return &load{cl: cl, bases: bases, led: led, start: start, end: start.Add(time.Hour)}
}

// run drives workers until stop is closed, then lets each finish its
// current request (so nothing in flight is abandoned by the test itself).
func (l *load) run(workers int, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, ok := l.create()
				if ok && (r.State == "booked" || r.State == "pending") {
					l.release(r.ID)
				}
			}
		}()
	}
	return &wg
}

func (l *load) base() string { return l.bases[l.next.Add(1)%uint64(len(l.bases))] }

// create books one GPU until answered. ok is false when the load gave up
// or the answer was a final refusal (quota, capacity).
func (l *load) create() (reservationJSON, bool) {
	key := uuid.NewString()
	body := map[string]any{"poolId": poolID, "gpus": 1, "gpuModel": gpuModel, "vcpu": 1, "memoryMb": 1024, "diskGb": 1,
		"start": l.start.Format(time.RFC3339), "end": l.end.Format(time.RFC3339)}
	var r reservationJSON
	err := l.retry(func() error {
		return l.cl.do(context.Background(), "POST", l.base()+"/v1/reservations", key, body, &r)
	}, "CONFLICT") // on create: the same key still in flight
	if err != nil {
		if statusOf(err) == 0 || statusOf(err) >= 500 || codeOf(err) == "CONFLICT" {
			l.led.mu.Lock()
			l.led.gaveUp++
			l.led.mu.Unlock()
		}
		return r, false
	}
	l.led.record(key, r)
	return r, true
}

// release ends a reservation. It takes no Idempotency-Key: a retry after a
// lost answer is refused with 409, which leaves the acknowledged state
// (booked) behind and the audit accepts released as a later legal state.
func (l *load) release(id string) {
	var r reservationJSON
	err := l.retry(func() error {
		return l.cl.do(context.Background(), "POST", l.base()+"/v1/reservations/"+id+"/release", "", nil, &r)
	})
	switch {
	case err == nil:
		l.led.record("", r)
	case statusOf(err) == http.StatusConflict:
		l.led.releaseConf.Add(1)
	}
}

// retry runs call until it succeeds, fails with a status that is not
// retryable, or retryFor passes. Transport errors and 5xx are retried,
// plus the extra error codes given.
func (l *load) retry(call func() error, alsoRetry ...string) error {
	deadline := time.Now().Add(retryFor)
	for {
		err := call()
		st := statusOf(err)
		retryable := err != nil && (st == 0 || st >= 500)
		for _, c := range alsoRetry {
			retryable = retryable || (err != nil && codeOf(err) == c)
		}
		if !retryable {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %s: %w", retryFor, err)
		}
		l.led.retries.Add(1)
		time.Sleep(retryBackoff)
	}
}
