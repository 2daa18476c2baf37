package httpapi

import (
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/bettercompute/compute/core"
)

// The rate-limit headers of the IETF draft "RateLimit header fields for
// HTTP" (draft-ietf-httpapi-ratelimit-headers), on every authenticated /v1
// response while the limit is on.
const (
	headerRateLimitLimit     = "RateLimit-Limit"
	headerRateLimitRemaining = "RateLimit-Remaining"
	headerRateLimitReset     = "RateLimit-Reset"
)

// rateLimitSweepEvery is how often the buckets back at a full allowance
// are forgotten (a new bucket starts full, so nothing is lost).
const rateLimitSweepEvery = time.Minute

// tokenRateLimiter limits each API token's requests with a token bucket
// (golang.org/x/time/rate): Burst requests at once, then Rate per second.
// Buckets live in this process's memory, so the limit is per API process:
// behind a load balancer spreading a client over n processes, it gets up
// to n times the rate. That bounds what one token can make one process
// do, which is the point; a fleet-wide quota would need shared state on
// every request.
type tokenRateLimiter struct {
	limit rate.Limit
	burst int
	now   func() time.Time

	mu      sync.Mutex
	buckets map[string]*rate.Limiter
	sweepAt time.Time
}

// newTokenRateLimiter limits each token to perSecond requests per second
// with bursts of burst (0: twice the rate, at least 1). perSecond <= 0 is
// no limit: nil, whose middleware passes everything.
func newTokenRateLimiter(perSecond float64, burst int) *tokenRateLimiter {
	if perSecond <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = max(1, int(math.Ceil(2*perSecond)))
	}
	return &tokenRateLimiter{limit: rate.Limit(perSecond), burst: burst, now: time.Now, buckets: map[string]*rate.Limiter{}}
}

// middleware takes one request from the caller's bucket and says how much
// is left in the RateLimit-* headers; an empty bucket is 429 RATE_LIMITED
// with Retry-After. It runs after authentication (it needs the token).
func (l *tokenRateLimiter) middleware() echo.MiddlewareFunc {
	if l == nil {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			ok, remaining, reset, wait := l.take(rateLimitKey(ActorOf(c)))
			h := c.Response().Header()
			h.Set(headerRateLimitLimit, strconv.Itoa(l.burst))
			h.Set(headerRateLimitRemaining, strconv.Itoa(remaining))
			h.Set(headerRateLimitReset, strconv.Itoa(reset))
			if !ok {
				return rateLimited(c, wait, "too many requests for this token: at most %d at once and %s per second; retry after Retry-After seconds",
					l.burst, strconv.FormatFloat(float64(l.limit), 'f', -1, 64))
			}
			return next(c)
		}
	}
}

// rateLimitKey is the bucket a caller draws from: its token, or its
// identity for an actor without one (never on /v1 today).
func rateLimitKey(a core.Actor) string {
	if a.TokenID != "" {
		return a.TokenID
	}
	return "identity:" + a.Tenant + "/" + a.Identity
}

// take takes one request from key's bucket. It returns whether the request
// may go ahead, the whole requests left, the seconds until the bucket is
// full again (the draft's reset) and, when refused, how long until one
// request is available.
func (l *tokenRateLimiter) take(key string) (ok bool, remaining, reset int, wait time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.After(l.sweepAt) {
		for k, b := range l.buckets {
			if b.TokensAt(now) >= float64(l.burst) {
				delete(l.buckets, k)
			}
		}
		l.sweepAt = now.Add(rateLimitSweepEvery)
	}
	b, found := l.buckets[key]
	if !found {
		b = rate.NewLimiter(l.limit, l.burst)
		l.buckets[key] = b
	}
	ok = b.AllowN(now, 1)
	tokens := b.TokensAt(now)
	remaining = max(0, int(math.Floor(tokens)))
	reset = int(math.Ceil((float64(l.burst) - tokens) / float64(l.limit)))
	if !ok {
		wait = time.Duration((1 - tokens) / float64(l.limit) * float64(time.Second))
	}
	return ok, remaining, max(0, reset), wait
}
