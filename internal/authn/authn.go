// Package authn authenticates bearer tokens against api_tokens, with the
// 30-second cache the specification calls for.
//
// The cache is only a cache: every entry can be rebuilt from the table, and
// a revocation reaches every process through the authz_changes feed, which
// Sync tails with the outbox's snapshot-xmin cursor shape. A revoked token
// therefore stops working within one Sync poll, not after the cache TTL.
package authn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// CacheTTL is how long a successful authentication is reused.
const CacheTTL = 30 * time.Second

// HashToken is how a token secret is stored and looked up: its SHA-256.
// Secrets are long random strings, so a plain hash suffices.
func HashToken(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

var errUnauthenticated = core.Errorf(core.CodeUnauthenticated, "missing, unknown or revoked token")

type entry struct {
	actor   core.Actor
	expires time.Time
}

// Authenticator resolves bearer tokens to actors.
type Authenticator struct {
	pool *pgxpool.Pool
	ttl  time.Duration
	now  func() time.Time // cache expiry only; not business time

	mu      sync.Mutex
	byHash  map[string]entry
	cursor  [2]uint64 // (txid, seq) of the last authz change applied
	started bool
}

// New returns an Authenticator whose cache entries live ttl.
func New(pool *pgxpool.Pool, ttl time.Duration) *Authenticator {
	return &Authenticator{pool: pool, ttl: ttl, now: time.Now, byHash: map[string]entry{}}
}

// Authenticate returns the actor a token secret stands for, or an
// UNAUTHENTICATED error.
func (a *Authenticator) Authenticate(ctx context.Context, secret string) (core.Actor, error) {
	if secret == "" {
		return core.Actor{}, errUnauthenticated
	}
	hash := HashToken(secret)
	key := hex.EncodeToString(hash)
	a.mu.Lock()
	e, ok := a.byHash[key]
	a.mu.Unlock()
	if ok && a.now().Before(e.expires) {
		return e.actor, nil
	}
	row, err := db.New(a.pool).ApiTokenByHash(ctx, hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return core.Actor{}, errUnauthenticated
	}
	if err != nil {
		return core.Actor{}, db.Translate(err, "token")
	}
	actor := core.Actor{TokenID: row.ID, Tenant: row.TenantID, Identity: row.Identity, Role: core.Role(row.Role)}
	a.mu.Lock()
	a.byHash[key] = entry{actor: actor, expires: a.now().Add(a.ttl)}
	a.mu.Unlock()
	return actor, nil
}

// Sync applies the authz changes committed since the last call, evicting
// every cached token they name. The first call only finds where the feed
// ends: nothing is cached before it.
func (a *Authenticator) Sync(ctx context.Context) error {
	q := db.New(a.pool)
	a.mu.Lock()
	started, cursor := a.started, a.cursor
	a.mu.Unlock()
	if !started {
		f, err := q.AuthzChangesFrontier(ctx)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("authz feed frontier: %w", err)
		}
		a.mu.Lock()
		a.cursor, a.started = [2]uint64{f.Txid, uint64(f.Seq)}, true
		a.mu.Unlock()
		return nil
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
		for _, r := range rows {
			evict[r.TokenID] = true
		}
		last := rows[len(rows)-1]
		cursor = [2]uint64{last.Txid, uint64(last.Seq)}
		a.mu.Lock()
		for k, e := range a.byHash {
			if evict[e.actor.TokenID] {
				delete(a.byHash, k)
			}
		}
		a.cursor = cursor
		a.mu.Unlock()
	}
}

// Run calls Sync every poll interval until ctx ends.
func (a *Authenticator) Run(ctx context.Context, poll time.Duration, onErr func(error)) {
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		if err := a.Sync(ctx); err != nil && ctx.Err() == nil && onErr != nil {
			onErr(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
