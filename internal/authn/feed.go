package authn

// The revocation feed: every process tails authz_changes (Sync, run by
// Run) and applies each change to its cache and its watches; the process
// that commits a revocation applies it at once (Revoked).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/tracing"
)

// Sync applies the authz changes committed since the last call, evicting
// every cached token they name. The first call only finds where the feed
// ends (start), unless a lookup found it already: nothing is cached before
// it.
func (a *Authenticator) Sync(ctx context.Context) error {
	q := db.New(a.pool)
	a.mu.Lock()
	started, cursor := a.started, a.cursor
	a.mu.Unlock()
	if !started {
		return a.start(ctx)
	}
	for {
		rows, err := q.AuthzChangesAfter(ctx, db.AuthzChangesAfterParams{AfterTxid: cursor[0], AfterSeq: int64(cursor[1]), MaxRows: 500})
		if err != nil {
			return fmt.Errorf("authz feed: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		evict := map[string]bool{}
		var revoked, suspended, resumed []string
		for _, r := range rows {
			evict[r.TokenID] = true
			switch r.Change {
			case changeRevoked:
				revoked = append(revoked, r.TokenID)
			case changeSuspended:
				suspended = append(suspended, r.TokenID)
			case changeResumed:
				resumed = append(resumed, r.TokenID)
			}
		}
		last := rows[len(rows)-1]
		cursor = [2]uint64{last.Txid, uint64(last.Seq)}
		now := a.now()
		a.mu.Lock()
		for _, m := range []map[string]time.Time{a.revoked, a.suspended} {
			for id, at := range m {
				if now.Sub(at) > revokedMemory {
					delete(m, id)
				}
			}
		}
		fire := a.applyLocked(evict, revoked, now)
		// In the feed's order: a resume after a suspend of the same
		// token in this batch leaves it resumed.
		fire = append(fire, a.applySuspensionsLocked(rows, now)...)
		a.cursor = cursor
		a.mu.Unlock()
		for _, f := range fire {
			f()
		}
	}
}

// Revoked applies revocations this process has just committed (a revoke it
// answered), before the feed brings them: their cached entries go and their
// watches fire, as Sync does for the feed's. The feed cannot be relied on
// for that at once: a change is read only once every transaction older
// than it has ended, anywhere on the server. Sync applies them again later,
// which changes nothing.
func (a *Authenticator) Revoked(tokenIDs []string) {
	ids := make(map[string]bool, len(tokenIDs))
	for _, id := range tokenIDs {
		ids[id] = true
	}
	now := a.now()
	a.mu.Lock()
	fire := a.applyLocked(ids, tokenIDs, now)
	a.mu.Unlock()
	for _, f := range fire {
		f()
	}
}

// Suspended applies a suspension this process has just committed (the
// tokens of the tenant it suspended), before the feed brings it, as
// Revoked does for revocations: their cached entries go and their watches
// fire. Resumed applies a resume the same way: the tokens are evicted
// (their cached refusal goes) and watches of them no longer fire at once.
func (a *Authenticator) Suspended(tokenIDs []string) { a.applyTenantChange(tokenIDs, changeSuspended) }

// Resumed applies a resume this process has just committed; see Suspended.
func (a *Authenticator) Resumed(tokenIDs []string) { a.applyTenantChange(tokenIDs, changeResumed) }

func (a *Authenticator) applyTenantChange(tokenIDs []string, change string) {
	rows := make([]db.AuthzChangesAfterRow, len(tokenIDs))
	ids := make(map[string]bool, len(tokenIDs))
	for i, id := range tokenIDs {
		rows[i] = db.AuthzChangesAfterRow{TokenID: id, Change: change}
		ids[id] = true
	}
	now := a.now()
	a.mu.Lock()
	fire := a.applyLocked(ids, nil, now)
	fire = append(fire, a.applySuspensionsLocked(rows, now)...)
	a.mu.Unlock()
	for _, f := range fire {
		f()
	}
}

// applySuspensionsLocked applies the suspended and resumed changes among
// rows, in order: a suspended token is remembered as such and its
// watches are returned, to be called once a.mu is released; a resumed one
// is forgotten. Their cache entries were evicted by applyLocked. a.mu is
// held.
func (a *Authenticator) applySuspensionsLocked(rows []db.AuthzChangesAfterRow, now time.Time) (fire []func()) {
	for _, r := range rows {
		switch r.Change {
		case changeSuspended:
			a.suspended[r.TokenID] = now
			for w := range a.watchers[r.TokenID] {
				fire = append(fire, w.revoked)
			}
			delete(a.watchers, r.TokenID)
		case changeResumed:
			delete(a.suspended, r.TokenID)
		}
	}
	return fire
}

// applyLocked applies token changes: the cached entries of the tokens in
// evict go, the revoked ones are remembered as revoked at now, and their
// watches are returned, to be called once a.mu is released. It bumps gen,
// so that a lookup in flight does not cache what it read before. a.mu is
// held.
func (a *Authenticator) applyLocked(evict map[string]bool, revoked []string, now time.Time) (fire []func()) {
	a.gen++
	for k, e := range a.byHash {
		if evict[e.actor.TokenID] {
			delete(a.byHash, k)
		}
	}
	for _, id := range revoked {
		a.revoked[id] = now
		for w := range a.watchers[id] {
			fire = append(fire, w.revoked)
		}
		delete(a.watchers, id)
	}
	return fire
}

// start finds where the authz feed ends, once, and tails it from there.
// Every change before that point is skipped, so it must come before the
// first lookup that may be cached or watched: Authenticate calls it when
// Sync (run in its own goroutine while the server already serves) has not
// yet. Otherwise a token looked up first and revoked before the first Sync
// would stay cached for a whole TTL, and its event streams open.
func (a *Authenticator) start(ctx context.Context) error {
	a.startMu.Lock()
	defer a.startMu.Unlock()
	a.mu.Lock()
	started := a.started
	a.mu.Unlock()
	if started {
		return nil
	}
	f, err := db.New(a.pool).AuthzChangesFrontier(ctx)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("authz feed frontier: %w", err)
	}
	a.mu.Lock()
	a.cursor, a.started = [2]uint64{f.Txid, uint64(f.Seq)}, true
	a.mu.Unlock()
	return nil
}

// The authz_changes.change of a revocation, and of a suspension and a
// resume of the token's tenant (one change per token of the tenant).
const (
	changeRevoked   = "revoked"
	changeSuspended = "suspended"
	changeResumed   = "resumed"
)

// Run calls Sync every poll interval until ctx ends. A run of failed
// syncs (a database outage fails every one) is logged to logger once as it
// starts, once a minute while it lasts and once when a sync works again
// (tracing.FailureStreak), not once a poll. A nil logger is slog.Default().
func (a *Authenticator) Run(ctx context.Context, poll time.Duration, logger *slog.Logger) {
	failures := tracing.NewFailureStreak(logger, "authz feed", slog.LevelWarn)
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		switch err := a.Sync(ctx); {
		case err == nil:
			failures.Succeeded()
		case ctx.Err() == nil:
			failures.Failed(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
