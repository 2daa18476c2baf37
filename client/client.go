// Package client is the Go client of the Better Compute API.
//
// Most of it is generated from docs/openapi.yaml by oapi-codegen
// (openapi.gen.go: the request and response types and one method per
// operation; `make client` regenerates it and a test fails when it is
// stale). This file and its siblings are the small hand-written layer the
// generator cannot know about:
//
//   - New, which authenticates every call and turns every answer that is not
//     2xx into an *APIError carrying the error envelope's code and message,
//     the status, Retry-After and the request id;
//   - retries that honour Retry-After on 429 and 503 for the calls that are
//     safe to repeat (GET, PUT, DELETE, or any call with an Idempotency-Key),
//     and a pace that follows the RateLimit-* headers;
//   - Subscribe, the event-stream subscriber that reconnects with backoff and
//     resumes with Last-Event-ID, without gaps;
//   - VerifyWebhook, the Standard Webhooks verifier for consumers.
//
// The package imports nothing else of this module, so a program that uses
// it links no server code.
package client

//go:generate go tool oapi-codegen -config oapi-codegen.yaml -o openapi.gen.go ../docs/openapi.yaml

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Options tunes New. The zero value is what the CLI uses.
type Options struct {
	// HTTPClient sends the requests; nil means a client without an overall
	// timeout (event streams stay open for an hour), which is what a
	// context deadline is for.
	HTTPClient *http.Client
	// UserAgent names the program in the User-Agent header.
	UserAgent string
	// MaxAttempts bounds the tries of one retryable call (first try
	// included); 0 means 4, 1 means never retry.
	MaxAttempts int
	// MaxRetryWait is the longest Retry-After (or backoff) waited for before
	// a retry; an answer asking for longer is returned as it is. 0 means 30 s.
	MaxRetryWait time.Duration
	// Sleep waits d or until ctx ends; nil means a timer. Tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxResponseBody bounds the bytes read from one answer (event streams
	// excepted); a read past it fails with ErrResponseTooLarge. 0 means
	// DefaultMaxResponseBody.
	MaxResponseBody int64
}

// API is a client of one server with one token: every generated method
// (ListReservationsWithResponse, CreateReservationWithResponse, …) plus
// Subscribe. A method's error is an *APIError when the server answered
// with an error, so its JSON2xx field is set whenever the error is nil.
// It is safe for concurrent use.
type API struct {
	*ClientWithResponses
	server string
	doer   *doer
}

// New returns a client of the server at base URL server (such as
// http://localhost:8080) that sends token as its bearer credential.
func New(server, token string, opts Options) (*API, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http://host:port or https://host", server)
	}
	if u.User != nil {
		// Never sent (the bearer token is the Authorization), but it
		// would be saved and printed with the URL.
		return nil, fmt.Errorf("server URL %s: has a user name or password; the token is the only credential", u.Redacted())
	}
	if token == "" {
		return nil, errors.New("token: empty")
	}
	if strings.ContainsAny(token, " \t\r\n") {
		return nil, errors.New("token: contains white space")
	}
	d := newDoer(token, opts)
	c, err := NewClientWithResponses(strings.TrimRight(server, "/"), WithHTTPClient(d))
	if err != nil {
		return nil, err
	}
	return &API{ClientWithResponses: c, server: strings.TrimRight(server, "/"), doer: d}, nil
}

// Server is the base URL the client talks to.
func (a *API) Server() string { return a.server }

// RateLimit is what the server last said about the token's request budget
// (zero until a response carried RateLimit-* headers).
func (a *API) RateLimit() RateLimit { return a.doer.rateLimit() }
