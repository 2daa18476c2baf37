// Package authn authenticates bearer tokens against api_tokens, with the
// 30-second cache the specification calls for.
//
// The cache is only a cache: every entry can be rebuilt from the table, and
// a revocation reaches every process through the authz_changes feed, which
// Sync tails with the outbox's snapshot-xmin cursor shape. A revoked token
// therefore stops working within one Sync poll, not after the cache TTL, and
// long-lived responses opened with it (event streams) are told through
// WatchRevocation.
//
// Failed lookups are remembered for a few seconds (NegativeTTL), so a
// client repeating a bad token costs one query, not one per request.
package authn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// CacheTTL is how long a successful authentication is reused.
const CacheTTL = 30 * time.Second

// NegativeTTL is how long a failed lookup (no such token, or revoked) is
// remembered; never longer than the cache TTL given to New. A secret that
// failed cannot become valid later (secrets are random and only exist once
// their token does), so this is safe and only spares the database.
const NegativeTTL = 5 * time.Second

const (
	// maxNegative bounds the failed-lookup memory: a client sending
	// endless distinct bad tokens fills it, after which failures are not
	// remembered (each costs a query again; the HTTP layer's per-client
	// limit on failures is what slows that client down).
	maxNegative = 10_000
	// revokedMemory is how long a revocation is remembered for
	// WatchRevocation: a watch registered just after Sync applied the
	// revocation (the token was authenticated just before) still fires.
	revokedMemory = 5 * time.Minute
	// maxDeadlines is how many token expiries are remembered before the
	// past ones are dropped.
	maxDeadlines = 1024
)

// HashToken is how a token secret is stored and looked up: its SHA-256.
// Secrets are long random strings, so a plain hash suffices.
func HashToken(secret string) []byte {
	sum := sha256.Sum256([]byte(secret))
	return sum[:]
}

var errUnauthenticated = core.Errorf(core.CodeUnauthenticated, "missing, unknown, revoked or expired token")

type entry struct {
	actor core.Actor
	// refusal, when set, is the answer instead of actor: the token is
	// valid but its tenant is suspended (TENANT_SUSPENDED). It is cached
	// like an actor, and evicted by the resumed changes of the feed.
	refusal error
	expires time.Time
}

// Authenticator resolves bearer tokens to actors.
type Authenticator struct {
	pool *pgxpool.Pool
	ttl  time.Duration
	now  func() time.Time // cache expiry only; not business time
	// afterFunc runs f after d on now's clock (time.AfterFunc; tests
	// replace it): how a watch fires at its token's expiry.
	afterFunc func(d time.Duration, f func()) (stop func() bool)
	// afterLookup, when set (tests), runs after each database lookup and
	// before its result is cached.
	afterLookup func()

	// startMu serialises start, so that the feed's starting point is read
	// once, whether Sync or the first Authenticate gets there first.
	startMu sync.Mutex

	mu     sync.Mutex
	byHash map[string]entry
	failed map[string]time.Time // token hash → until when its failure is remembered
	// gen counts the Sync rounds that applied changes. Authenticate caches
	// a lookup only if gen did not move while it ran: a revocation applied
	// meanwhile evicted nothing (the entry was not there yet), so storing
	// the older answer would bring the revoked token back for a whole TTL.
	gen      uint64
	cursor   [2]uint64 // (txid, seq) of the last authz change applied
	started  bool
	watchers map[string]map[*watch]struct{} // token id → open watches
	revoked  map[string]time.Time           // token id → when Sync applied its revocation (recent ones)
	// suspended holds the tokens whose tenant the feed said is suspended
	// and not resumed since (recent ones, like revoked): a watch of one
	// fires at once. A lookup that finds the tenant active clears its
	// token, as the feed's resume would.
	suspended map[string]time.Time
	// deadline is, for each token with an expiry that was looked up, when
	// it expires on this process's clock (the lookup's time plus what the
	// database said was left): cache entries end no later, and watches
	// fire then.
	deadline map[string]time.Time
}

// watch is one WatchRevocation registration.
type watch struct{ revoked func() }

// New returns an Authenticator whose cache entries live ttl. Failed
// lookups are remembered for the smaller of ttl and NegativeTTL.
func New(pool *pgxpool.Pool, ttl time.Duration) *Authenticator {
	return &Authenticator{pool: pool, ttl: ttl, now: time.Now, afterFunc: afterFunc, byHash: map[string]entry{},
		failed: map[string]time.Time{}, watchers: map[string]map[*watch]struct{}{}, revoked: map[string]time.Time{},
		suspended: map[string]time.Time{}, deadline: map[string]time.Time{}}
}

// Authenticate returns the actor a token secret stands for, an
// UNAUTHENTICATED error, or a TENANT_SUSPENDED one naming the reason when
// the token is valid but its tenant is suspended.
func (a *Authenticator) Authenticate(ctx context.Context, secret string) (core.Actor, error) {
	if secret == "" {
		return core.Actor{}, errUnauthenticated
	}
	hash := HashToken(secret)
	key := hex.EncodeToString(hash)
	now := a.now()
	a.mu.Lock()
	e, ok := a.byHash[key]
	failedUntil, failed := a.failed[key]
	gen, started := a.gen, a.started
	a.mu.Unlock()
	if ok && now.Before(e.expires) {
		if e.refusal != nil {
			return core.Actor{}, e.refusal
		}
		return e.actor, nil
	}
	if failed && now.Before(failedUntil) {
		return core.Actor{}, errUnauthenticated
	}
	if !started {
		// The feed must start before the lookup: a revocation committed
		// after it is then after the feed's start, and Sync applies it.
		if err := a.start(ctx); err != nil {
			return core.Actor{}, pg.Translate(err, "authz feed")
		}
	}
	row, err := db.New(a.pool).ApiTokenByHash(ctx, hash)
	if a.afterLookup != nil {
		a.afterLookup()
	}
	if errors.Is(err, pgx.ErrNoRows) {
		a.rememberFailure(key)
		return core.Actor{}, errUnauthenticated
	}
	if err != nil {
		return core.Actor{}, pg.Translate(err, "token")
	}
	actor := core.Actor{TokenID: row.ID, Tenant: row.TenantID, Identity: row.Identity, Role: core.Role(row.Role)}
	var refusal error
	if row.SuspendedReason != nil {
		refusal = core.TenantSuspendedError(row.TenantID, *row.SuspendedReason)
	}
	a.mu.Lock()
	expires := a.now().Add(a.ttl)
	if row.ExpiresAt != nil {
		// Measured from the lookup's start, so never later than the
		// database's expiry.
		end := now.Add(row.ExpiresAt.Sub(row.DbNow))
		a.setDeadline(row.ID, end, now)
		expires = minTime(expires, end)
	}
	if a.gen == gen {
		a.byHash[key] = entry{actor: actor, refusal: refusal, expires: expires}
		if refusal == nil {
			// The lookup saw the tenant resumed before the feed did (it
			// reads a change only once every older transaction on the
			// server ended): a watch of the token must not fire at once
			// for a suspension this lookup shows is over. gen did not
			// move, so no newer suspension was applied meanwhile.
			delete(a.suspended, row.ID)
		}
	}
	a.mu.Unlock()
	if refusal != nil {
		return core.Actor{}, refusal
	}
	return actor, nil
}

// setDeadline remembers when tokenID expires on this process's clock,
// first dropping past deadlines when the memory is full. a.mu is held.
func (a *Authenticator) setDeadline(tokenID string, end, now time.Time) {
	if len(a.deadline) >= maxDeadlines {
		for id, d := range a.deadline {
			if !now.Before(d) {
				delete(a.deadline, id)
			}
		}
	}
	a.deadline[tokenID] = end
}

// NoteExpiry tells the authenticator that tokenID expires in left (its
// expiry less the business time of a lookup made just now), for a token
// this process learnt of without Authenticate: a stream ticket's. Watches
// registered afterwards fire at that expiry.
func (a *Authenticator) NoteExpiry(tokenID string, left time.Duration) {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.setDeadline(tokenID, now.Add(left), now)
}

// AuthenticateCached answers from the cache alone, without a database
// lookup: ok is false when the token is not cached (unknown, expired or
// evicted). The HTTP layer uses it for clients throttled after failures,
// so a shared address does not lock out callers whose token is known good.
func (a *Authenticator) AuthenticateCached(secret string) (core.Actor, bool) {
	if secret == "" {
		return core.Actor{}, false
	}
	key := hex.EncodeToString(HashToken(secret))
	a.mu.Lock()
	e, ok := a.byHash[key]
	a.mu.Unlock()
	if !ok || e.refusal != nil || !a.now().Before(e.expires) {
		return core.Actor{}, false
	}
	return e.actor, true
}

// rememberFailure records a failed lookup for the negative TTL, unless
// the memory is full of unexpired failures.
func (a *Authenticator) rememberFailure(key string) {
	ttl := min(a.ttl, NegativeTTL)
	if ttl <= 0 {
		return
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.failed) >= maxNegative {
		for k, until := range a.failed {
			if !now.Before(until) {
				delete(a.failed, k)
			}
		}
		if len(a.failed) >= maxNegative {
			return
		}
	}
	a.failed[key] = now.Add(ttl)
}

// WatchRevocation calls revoked once when the authz feed reports tokenID
// revoked, or its tenant suspended: from Sync's goroutine, or before
// returning if Sync applied that change within the last few minutes (the
// caller authenticated just before it was applied) and, for a suspension,
// no resume since; or when the token expires, if it has an expiry.
// stop ends the watch; call it when the response ends. revoked must not
// block.
func (a *Authenticator) WatchRevocation(tokenID string, revoked func()) (stop func()) {
	var once sync.Once
	w := &watch{revoked: func() { once.Do(revoked) }}
	a.mu.Lock()
	_, gone := a.revoked[tokenID]
	if _, suspended := a.suspended[tokenID]; gone || suspended {
		a.mu.Unlock()
		w.revoked()
		return func() {}
	}
	if a.watchers[tokenID] == nil {
		a.watchers[tokenID] = map[*watch]struct{}{}
	}
	a.watchers[tokenID][w] = struct{}{}
	deadline, expires := a.deadline[tokenID]
	a.mu.Unlock()
	stopExpiry := func() bool { return false }
	if expires {
		stopExpiry = a.afterFunc(deadline.Sub(a.now()), w.revoked)
	}
	return func() {
		stopExpiry()
		a.mu.Lock()
		defer a.mu.Unlock()
		if ws := a.watchers[tokenID]; ws != nil {
			delete(ws, w)
			if len(ws) == 0 {
				delete(a.watchers, tokenID)
			}
		}
	}
}

// afterFunc is time.AfterFunc, returning its timer's Stop.
func afterFunc(d time.Duration, f func()) (stop func() bool) { return time.AfterFunc(d, f).Stop }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
