package outbox

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// coalescingNotifier is a Notifier whose notifications are function calls:
// each one signals began and then waits for a value on release.
func coalescingNotifier() (n *Notifier, began chan struct{}, release chan struct{}, sent *atomic.Int64) {
	n = newNotifier(nil)
	began, release, sent = make(chan struct{}, 100), make(chan struct{}), new(atomic.Int64)
	n.notify = func() {
		began <- struct{}{}
		<-release
		sent.Add(1)
	}
	return n, began, release, sent
}

// Commits that come while a notification is in flight are announced by
// exactly one more notification, sent after the one in flight: the last
// commit is never left unannounced, and many commits cost two.
func TestNotifierCoalescesCommitsDuringAFlight(t *testing.T) {
	n, began, release, sent := coalescingNotifier()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	n.committed()
	<-began // the first notification is in flight
	for range 50 {
		n.committed()
	}
	release <- struct{}{}
	<-began // exactly one more, for the 50
	release <- struct{}{}
	require.NoError(t, n.Wait(ctx))
	require.Equal(t, int64(2), sent.Load())
	select {
	case <-began:
		t.Fatal("a third notification for commits already announced")
	default:
	}

	// Idle again: the next commit is announced by a notification of its own.
	n.committed()
	<-began
	release <- struct{}{}
	require.NoError(t, n.Wait(ctx))
	require.Equal(t, int64(3), sent.Load())
}

// Commits from many goroutines, landing at any point of the sender's
// cycle (in flight, keeping the window, just gone idle): once the notifier
// is idle, its last notification began after the last commit, and there
// were fewer notifications than commits.
func TestNotifierNeverLosesTheLastCommit(t *testing.T) {
	n := newNotifier(nil)
	var commits, seenAtLastNotify, notifications atomic.Int64
	n.notify = func() {
		seenAtLastNotify.Store(commits.Load())
		notifications.Add(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for round := range 20 {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 50 {
					commits.Add(1)
					n.committed()
				}
			})
		}
		wg.Wait()
		require.NoError(t, n.Wait(ctx))
		require.Equal(t, commits.Load(), seenAtLastNotify.Load(), "round %d: the last commit was not followed by a notification", round)
	}
	require.Less(t, notifications.Load(), commits.Load()/2, "coalesced")
}

// The in-process poke reaches a listener's subscribers before the commit's
// caller goes on, without a database round trip.
func TestNotifierPokesListenersAtOnce(t *testing.T) {
	n, began, release, _ := coalescingNotifier()
	l := NewListener("postgres://unused", nil)
	sub := l.Subscribe()
	n.listeners = append(n.listeners, l)
	n.committed()
	select {
	case <-sub:
	default:
		t.Fatal("no poke right after the commit")
	}
	<-began
	release <- struct{}{}
	require.NoError(t, n.Wait(context.Background()))
}
