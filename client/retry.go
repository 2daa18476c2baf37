package client

import (
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// RateLimit is the server's account of a token's request budget, from the
// RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset headers of a
// response (a token bucket of Limit requests, Remaining of them left, full
// again in Reset).
type RateLimit struct {
	Limit, Remaining int
	Reset            time.Duration
	// At is when the response carrying them arrived; zero if none has.
	At time.Time
}

// Defaults of Options.
const (
	defaultMaxAttempts  = 4
	defaultMaxRetryWait = 30 * time.Second
	// firstBackoff and maxBackoff bound the wait before a retry whose
	// answer carried no Retry-After.
	firstBackoff = 500 * time.Millisecond
	maxBackoff   = 8 * time.Second
)

// doer is the HttpRequestDoer under the generated client: it adds the
// bearer token, turns answers that are not 2xx into *APIError, retries what
// is safe to retry, and paces requests by the RateLimit headers.
type doer struct {
	http        *http.Client
	token, ua   string
	maxAttempts int
	maxWait     time.Duration
	maxBody     int64
	sleep       func(context.Context, time.Duration) error

	mu        sync.Mutex
	rl        RateLimit
	notBefore time.Time // no request leaves before this (an empty bucket, a 429)
}

func newDoer(token string, opts Options) *doer {
	d := &doer{http: opts.HTTPClient, token: token, ua: opts.UserAgent,
		maxAttempts: opts.MaxAttempts, maxWait: opts.MaxRetryWait, maxBody: opts.MaxResponseBody, sleep: opts.Sleep}
	if d.http == nil {
		d.http = &http.Client{}
	}
	if d.maxAttempts <= 0 {
		d.maxAttempts = defaultMaxAttempts
	}
	if d.maxWait <= 0 {
		d.maxWait = defaultMaxRetryWait
	}
	if d.sleep == nil {
		d.sleep = sleep
	}
	if d.maxBody <= 0 {
		d.maxBody = DefaultMaxResponseBody
	}
	return d
}

// Do sends req. Its error is an *APIError for an answer that is not 2xx
// (the body read and closed), or the transport's error.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	req.Header.Set("Authorization", "Bearer "+d.token)
	if d.ua != "" {
		req.Header.Set("User-Agent", d.ua)
	}
	retryable := Retryable(req)
	for attempt := 1; ; attempt++ {
		if attempt == 1 { // a retry has waited already
			if err := d.pace(ctx); err != nil {
				return nil, err
			}
		}
		if attempt > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req.Body = body
		}
		resp, err := d.http.Do(req)
		if err != nil {
			return nil, err
		}
		d.observe(resp)
		if resp.StatusCode < 400 {
			limitBody(resp, d.maxBody)
			return resp, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		apiErr := errorFrom(resp, body, time.Now())
		if !retryable || attempt >= d.maxAttempts ||
			(resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable) {
			return nil, apiErr
		}
		wait := apiErr.RetryAfter
		if wait <= 0 {
			wait = backoff(attempt)
		}
		if wait > d.maxWait {
			return nil, apiErr
		}
		if err := d.sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// Retryable reports whether a request may be sent again after a 429 or 503
// without risk of doing twice what it asks: GET, HEAD, OPTIONS, PUT and
// DELETE are idempotent by their method, and any request carrying an
// Idempotency-Key is made so by the server, which replays the stored
// answer to a repeat.
func Retryable(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" && (req.Body == nil || req.GetBody != nil)
}

// backoff is the wait before retry attempt+1 when the server named none:
// doubling from firstBackoff up to maxBackoff, with jitter so that many
// clients told no at once do not come back at once.
func backoff(attempt int) time.Duration {
	d := firstBackoff << min(attempt-1, 10)
	d = min(d, maxBackoff)
	return d/2 + rand.N(d/2+1)
}

// observe records the RateLimit headers of resp, and when the token's
// bucket is empty (or the answer is 429 with Retry-After) holds the next
// request back until a request is available again: for an empty bucket of
// Limit requests that is full again in Reset, Reset/Limit.
func (d *doer) observe(resp *http.Response) {
	now := time.Now()
	limit, okL := headerInt(resp.Header, "RateLimit-Limit")
	remaining, okR := headerInt(resp.Header, "RateLimit-Remaining")
	reset, okS := headerInt(resp.Header, "RateLimit-Reset")
	d.mu.Lock()
	defer d.mu.Unlock()
	if okL && okR && okS {
		d.rl = RateLimit{Limit: limit, Remaining: remaining, Reset: time.Duration(reset) * time.Second, At: now}
		if remaining <= 0 && limit > 0 {
			d.notBefore = laterOf(d.notBefore, now.Add(d.rl.Reset/time.Duration(limit)))
		}
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		if ra := parseRetryAfter(resp.Header.Get("Retry-After"), now); ra > 0 {
			d.notBefore = laterOf(d.notBefore, now.Add(ra))
		}
	}
}

// pace waits until d.notBefore, but never longer than maxWait: past that
// the server is asked anyway and its answer decides.
func (d *doer) pace(ctx context.Context) error {
	d.mu.Lock()
	wait := time.Until(d.notBefore)
	d.mu.Unlock()
	if wait <= 0 {
		return nil
	}
	return d.sleep(ctx, min(wait, d.maxWait))
}

func (d *doer) rateLimit() RateLimit {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rl
}

func headerInt(h http.Header, name string) (int, bool) {
	v, err := strconv.Atoi(strings.TrimSpace(h.Get(name)))
	return v, err == nil
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
