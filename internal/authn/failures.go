package authn

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Defaults of the per-client limit on failed authentications.
const (
	// DefaultFailureBurst is how many failed authentications a client
	// address may make in a row before it is throttled.
	DefaultFailureBurst = 20
	// DefaultFailureRate is how fast a throttled client earns attempts
	// back, per second (one every two seconds).
	DefaultFailureRate = 0.5
	// maxFailureClients bounds the addresses tracked at once; past it the
	// addresses back at a full allowance are forgotten first, and if that
	// is not enough, all of them (memory stays bounded whatever a client
	// with many addresses does).
	maxFailureClients = 10_000
)

// FailureLimiter throttles the client addresses that fail authentication
// too often: each failure takes a token from the address's bucket
// (golang.org/x/time/rate); an address with an empty bucket is throttled
// and answered without a credential lookup, so guessing secrets costs the
// guesser time and the database nothing. Successes cost nothing, so
// well-behaved clients never notice it. The API (bearer tokens) and the
// gateway (node credentials) each keep one.
type FailureLimiter struct {
	limit rate.Limit
	burst int

	mu      sync.Mutex
	clients map[string]*rate.Limiter
}

// NewFailureLimiter allows burst failures in a row per client, then one
// per 1/perSecond seconds. Zero (or less) means DefaultFailureRate and
// DefaultFailureBurst.
func NewFailureLimiter(perSecond float64, burst int) *FailureLimiter {
	if perSecond <= 0 {
		perSecond = DefaultFailureRate
	}
	if burst <= 0 {
		burst = DefaultFailureBurst
	}
	return &FailureLimiter{limit: rate.Limit(perSecond), burst: burst, clients: map[string]*rate.Limiter{}}
}

// Throttled reports whether client has no attempts left and, if so, how
// long until it has one.
func (l *FailureLimiter) Throttled(client string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.clients[client]
	if !ok {
		return 0, false
	}
	tokens := lim.TokensAt(now)
	if tokens >= 1 {
		return 0, false
	}
	return time.Duration((1 - tokens) / float64(l.limit) * float64(time.Second)), true
}

// Failed records one failed authentication of client.
func (l *FailureLimiter) Failed(client string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.clients[client]
	if !ok {
		if len(l.clients) >= maxFailureClients {
			l.pruneLocked(now)
		}
		lim = rate.NewLimiter(l.limit, l.burst)
		l.clients[client] = lim
	}
	lim.AllowN(now, 1)
}

// pruneLocked forgets the clients back at a full allowance (they would
// start from one anyway), or everyone if that frees nothing.
func (l *FailureLimiter) pruneLocked(now time.Time) {
	for c, lim := range l.clients {
		if lim.TokensAt(now) >= float64(l.burst) {
			delete(l.clients, c)
		}
	}
	if len(l.clients) >= maxFailureClients {
		clear(l.clients)
	}
}
