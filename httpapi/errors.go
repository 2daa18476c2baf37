package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/pg"
)

// statusOf is the one table from error codes to HTTP status. Codes are the
// contract clients switch on; the status only helps generic HTTP tooling.
var statusOf = map[core.Code]int{
	core.CodeInvalidArgument:       http.StatusBadRequest,
	core.CodeUnsupportedMediaType:  http.StatusUnsupportedMediaType,
	core.CodeUnauthenticated:       http.StatusUnauthorized,
	core.CodePermissionDenied:      http.StatusForbidden,
	core.CodeNotFound:              http.StatusNotFound,
	core.CodeMethodNotAllowed:      http.StatusMethodNotAllowed,
	core.CodeConflict:              http.StatusConflict,
	core.CodeQuotaExceeded:         http.StatusConflict,
	core.CodeIdempotencyKeyReused:  http.StatusUnprocessableEntity,
	core.CodeCursorExpired:         http.StatusGone,
	core.CodeUnavailable:           http.StatusServiceUnavailable,
	core.CodeRateLimited:           http.StatusTooManyRequests,
	core.CodeTokenLifetimeExceeded: http.StatusBadRequest,
	core.CodeTenantSuspended:       http.StatusForbidden,
	core.CodeInternal:              http.StatusInternalServerError,
}

// StatusOf returns the HTTP status for a code; an unknown code is a bug and
// is served as 500.
func StatusOf(code core.Code) int {
	if s, ok := statusOf[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// ErrorBody is the one error envelope of the API:
// {"error":{"code":"CONFLICT","message":"…"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the inside of the envelope: a stable code and a message
// that is safe to show to the caller.
type ErrorDetail struct {
	Code    core.Code `json:"code"`
	Message string    `json:"message"`
}

// internalMessage is all a caller learns about a failure nobody classified:
// the details are in the log, findable by the request id.
const internalMessage = "internal error"

// Context keys this package stores on the echo context.
const (
	ctxKeyErrorHandled = "httpapi.errorHandled"
	ctxKeyErrorCode    = "httpapi.errorCode"
)

// echoProtocolError classifies errors echo itself raises before or around a
// handler (routing, body limit, content negotiation). They keep echo's more
// precise status (405, 413, 415) but get a code from the API's set, so a
// client never sees a 500 for its own mistake.
func echoProtocolError(he *echo.HTTPError) (int, ErrorDetail) {
	status := he.Code
	msg := http.StatusText(status)
	if m, ok := he.Message.(string); ok && m != "" {
		msg = m
	}
	var code core.Code
	switch status {
	case http.StatusNotFound:
		code, msg = core.CodeNotFound, "route not found"
	case http.StatusMethodNotAllowed:
		// The path exists but this operation on it does not; Allow
		// (set by the router or v1NotFound) lists the ones it has.
		code, msg = core.CodeMethodNotAllowed, "method not allowed on this route"
	case http.StatusRequestEntityTooLarge:
		code, msg = core.CodeInvalidArgument, "request body too large"
	case http.StatusUnsupportedMediaType:
		code, msg = core.CodeUnsupportedMediaType, "unsupported content type: send application/json"
	case http.StatusUnauthorized:
		code = core.CodeUnauthenticated
	case http.StatusForbidden:
		code = core.CodePermissionDenied
	case http.StatusConflict:
		code = core.CodeConflict
	case http.StatusTooManyRequests:
		code = core.CodeRateLimited
	case http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		code = core.CodeUnavailable
	default:
		if status >= 400 && status < 500 {
			code = core.CodeInvalidArgument
		} else {
			// A 5xx from echo carries no safe message of ours.
			return http.StatusInternalServerError, ErrorDetail{Code: core.CodeInternal, Message: internalMessage}
		}
	}
	return status, ErrorDetail{Code: code, Message: msg}
}

// classify turns any error into a status and an envelope. *core.Error is
// the normal case; echo's HTTP errors are protocol mistakes; everything else
// is INTERNAL with a generic message, so internals never leak. A message
// that quotes what the client sent (an id from the path, a cursor or a
// limit from the query string) has anything shaped like a secret redacted:
// the envelope reaches proxies' and clients' logs, and the span of a
// failed command carries it too.
func classify(err error) (int, ErrorDetail) {
	status, detail := classifyUnredacted(err)
	detail.Message = core.RedactSecrets(detail.Message)
	return status, detail
}

func classifyUnredacted(err error) (int, ErrorDetail) {
	var ce *core.Error
	if errors.As(err, &ce) {
		if ce.Code == core.CodeInternal {
			return http.StatusInternalServerError, ErrorDetail{Code: core.CodeInternal, Message: internalMessage}
		}
		if _, known := statusOf[ce.Code]; !known {
			return http.StatusInternalServerError, ErrorDetail{Code: core.CodeInternal, Message: internalMessage}
		}
		status := StatusOf(ce.Code)
		msg := ce.Message
		if msg == "" {
			msg = http.StatusText(status)
		}
		return status, ErrorDetail{Code: ce.Code, Message: core.Clip(msg, maxMessageBytes)}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return echoProtocolError(he)
	}
	if pg.IsCanceledOrTimedOut(err) {
		// The caller went away or a deadline passed: not a bug, and
		// retrying may succeed.
		return http.StatusServiceUnavailable, ErrorDetail{Code: core.CodeUnavailable, Message: "request cancelled or timed out"}
	}
	return http.StatusInternalServerError, ErrorDetail{Code: core.CodeInternal, Message: internalMessage}
}

// errorHandler returns the server's echo.HTTPErrorHandler: the one place
// errors become responses. Server errors (5xx) are logged with the request
// id, the route pattern and the cause (secrets redacted: a cause may quote
// an id the client sent); the caller gets the code and, for 500, only the
// request id to quote.
//
// echo may call it twice for one request (the access log middleware handles
// the error first so it can log the final status, then the error bubbles up
// to echo); the second call does nothing.
func errorHandler(logger *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if handled, _ := c.Get(ctxKeyErrorHandled).(bool); handled {
			return
		}
		c.Set(ctxKeyErrorHandled, true)

		status, detail := classify(err)
		c.Set(ctxKeyErrorCode, detail.Code)
		rid := c.Response().Header().Get(echo.HeaderXRequestID)
		if status >= 500 {
			attrs := []any{"request_id", rid, "method", c.Request().Method, "path", c.Path(),
				"code", detail.Code, "err", core.RedactSecrets(err.Error())}
			var pe *panicError
			if errors.As(err, &pe) {
				attrs = append(attrs, "stack", string(pe.stack))
			}
			logger.ErrorContext(c.Request().Context(), "request failed", attrs...)
		}
		if detail.Code == core.CodeInternal && rid != "" {
			detail.Message = fmt.Sprintf("%s (request id %s)", internalMessage, rid)
		}

		res := c.Response()
		if res.Committed {
			// A streaming handler failed after it started writing: the
			// status is gone, the log above is all that can be done.
			if status < 500 {
				logger.Warn("error after response started", "request_id", rid, "err", core.RedactSecrets(err.Error()))
			}
			return
		}
		if (detail.Code == core.CodeUnavailable || status == http.StatusTooManyRequests) && res.Header().Get("Retry-After") == "" {
			// A timeout, a cancelled or lost-race transaction, a database
			// away: retrying shortly may succeed. A limit names its own
			// wait (rateLimited); one that did not still owes the client
			// the header the contract promises on every 429 and 503.
			res.Header().Set("Retry-After", unavailableRetryAfter)
		}
		if status == http.StatusUnauthorized && res.Header().Get(echo.HeaderWWWAuthenticate) == "" {
			// RFC 6750: a 401 names the scheme the client should use.
			res.Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="compute"`)
		}
		var werr error
		if c.Request().Method == http.MethodHead {
			werr = c.NoContent(status)
		} else {
			werr = c.JSON(status, ErrorBody{Error: detail})
		}
		if werr != nil {
			logger.Warn("write error response", "request_id", rid, "err", werr.Error())
		}
	}
}

// panicError is a recovered panic on its way to the error handler, carrying
// the stack so the one log line for the failure includes it.
type panicError struct {
	value error
	stack []byte
}

func (p *panicError) Error() string { return "panic: " + p.value.Error() }
func (p *panicError) Unwrap() error { return p.value }

// rateLimited refuses a request with 429 RATE_LIMITED and a Retry-After of
// wait in whole seconds (at least 1). The header survives into the error
// response, which the error handler writes on the same echo response.
func rateLimited(c echo.Context, wait time.Duration, format string, args ...any) error {
	secs := max(int(math.Ceil(wait.Seconds())), 1)
	c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
	return core.Errorf(core.CodeRateLimited, format, args...)
}

// maxMessageBytes caps an error message: messages quote what the caller
// sent (an id, a field's value), which core.Clip cuts.
const maxMessageBytes = 1024
