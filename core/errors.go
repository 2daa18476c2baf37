package core

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Code is a stable, machine-readable error code. Clients switch on it; the
// HTTP layer maps it to a status with one table.
type Code string

// The error codes of the API. They are part of the public contract.
const (
	CodeInvalidArgument      Code = "INVALID_ARGUMENT"
	CodeUnsupportedMediaType Code = "UNSUPPORTED_MEDIA_TYPE" // a body in a format the route does not take (415)
	CodeUnauthenticated      Code = "UNAUTHENTICATED"
	CodePermissionDenied     Code = "PERMISSION_DENIED"
	CodeNotFound             Code = "NOT_FOUND"
	// CodeMethodNotAllowed: the path exists but not with the request's
	// method (405, with Allow listing the methods it has). Apart from
	// NOT_FOUND so a client can tell "no such object" from "no such
	// operation on this path".
	CodeMethodNotAllowed     Code = "METHOD_NOT_ALLOWED"
	CodeConflict             Code = "CONFLICT"
	CodeQuotaExceeded        Code = "QUOTA_EXCEEDED"
	CodeIdempotencyKeyReused Code = "IDEMPOTENCY_KEY_REUSED"
	CodeCursorExpired        Code = "CURSOR_EXPIRED"
	CodeUnavailable          Code = "UNAVAILABLE"
	CodeRateLimited          Code = "RATE_LIMITED" // over a limit: retry after Retry-After, not at once
	// CodeTokenLifetimeExceeded: a token asked for with no expiry, or a
	// later one than the operator's maximum token lifetime allows
	// (COMPUTE_MAX_TOKEN_TTL); ask again with an earlier expiresAt (400).
	CodeTokenLifetimeExceeded Code = "TOKEN_LIFETIME_EXCEEDED"
	// CodeTenantSuspended: the token's tenant is suspended by an operator
	// (POST /v1/tenants/{tenant}/suspend); the message names the reason.
	// Nothing the tenant sends is served until it is resumed (403).
	CodeTenantSuspended Code = "TENANT_SUSPENDED"
	CodeInternal        Code = "INTERNAL"
)

// Error is the one error type that crosses package boundaries with a code.
// Message is safe to show to the caller; Cause is for logs only.
type Error struct {
	Code    Code
	Message string
	Cause   error
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Cause }

// Errorf builds an *Error with a formatted, caller-safe message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap attaches a code and caller-safe message to an internal cause.
func Wrap(code Code, cause error, message string) *Error {
	return &Error{Code: code, Message: message, Cause: cause}
}

// CodeOf returns the code of the first *Error in err's chain, or
// CodeInternal when there is none: an error nobody classified is a bug.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// Clip cuts s, text an error message quotes from a caller's input, to at
// most max bytes at a character boundary, marking the cut with "…": an
// input far longer than any valid one must not come back whole in every
// refusal of it.
func Clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
