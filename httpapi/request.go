// The parts of a request every route reads the same way: the strict JSON
// body, the If-Match and Idempotency-Key headers, ?limit= and ?cursor= of a
// list, and the page a list answers with. Routes read them only through
// this file and its two halves, request_json.go (strict decoding) and
// request_list.go (limits, cursors, pages), so each rule is written once.

package httpapi

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
)

// Request headers the routes read.
const (
	headerIfMatch        = "If-Match"
	headerIdempotencyKey = "Idempotency-Key"
)

// maxIdempotencyKey is the longest key idempotency_keys accepts.
const maxIdempotencyKey = 255

// Bind decodes a JSON request body into v, strictly. A field the server does
// not know is rejected rather than ignored: a client that misspells
// "notAfter" must learn it now, not when its reservation ends early. Also
// rejected: an empty body, a body that is only "null", malformed JSON, a
// value of the wrong type, and anything after the JSON value. Field names
// match exactly: encoding/json would take "POOLID" for "poolId", so keys
// are checked against the json tags first (knownKeys). Every rejection is
// INVALID_ARGUMENT with a message that names the problem and, where there
// is one, the field; a content type other than JSON is
// UNSUPPORTED_MEDIA_TYPE (415). A body over the server's limit stays
// echo's 413 error.
func Bind(c echo.Context, v any) error {
	body, err := readBody(c)
	if err != nil {
		return err
	}
	if len(body) == 0 {
		return errBodyRequired
	}
	return decodeStrict(c, body, v)
}

// bindIfSent is Bind for a body that may be left out: an empty body leaves
// v as it is, but a body that is sent is held to Bind's rules.
func bindIfSent(c echo.Context, v any) error {
	body, err := readBody(c)
	if err != nil || len(body) == 0 {
		return err
	}
	return decodeStrict(c, body, v)
}

// bindOptional binds a body to routes that need none (cordon, release, …):
// an empty body is fine, but a body that is sent is held to the same strict
// rules as any other, so `{"force":true}` is refused and not ignored.
func bindOptional(c echo.Context) error { return bindIfSent(c, &struct{}{}) }

// readsTakeNoBody is the /v1 group's middleware that holds a GET to
// bindOptional's rules: a read takes no body, so one with a field in it
// (`GET /v1/reservations` with `{"state":"pending"}`) is refused rather
// than answered with an unfiltered page that looks like a filtered one.
// A GET the router matched to no route (v1NotFound) is left to its 404 or
// 405: the path or the method is what is wrong, not the body.
func readsTakeNoBody() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			// Most reads carry no body at all: nothing to read then.
			req := c.Request()
			if req.Method == http.MethodGet && c.Path() != v1CatchAll && (req.ContentLength != 0 || len(req.TransferEncoding) > 0) {
				if err := bindOptional(c); err != nil {
					return err
				}
			}
			return next(c)
		}
	}
}

// bindBody is Bind followed by the text check every capacity request
// needs: a string PostgreSQL cannot store must be the caller's 400, not a
// driver error surfacing as 500.
func bindBody(c echo.Context, v any) error {
	if err := Bind(c, v); err != nil {
		return err
	}
	return storableText(reflect.ValueOf(v), "")
}

// bindUnversioned is bindBody for a route whose command has no version
// check: If-Match is refused (noIfMatch), then the body is bound.
func bindUnversioned(c echo.Context, v any) error {
	if err := noIfMatch(c); err != nil {
		return err
	}
	return bindBody(c, v)
}

// bindCreate reads what every create route takes: an optional
// Idempotency-Key (returned), no If-Match (there is no version yet), and a
// strict body into v.
func bindCreate(c echo.Context, v any) (key string, err error) {
	if key, err = idempotencyKey(c); err != nil {
		return "", err
	}
	return key, bindUnversioned(c, v)
}

// param returns a path parameter, refusing text PostgreSQL cannot store
// (NUL, invalid UTF-8), which a percent-encoded path can carry.
func param(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if v == "" {
		return "", core.Errorf(core.CodeInvalidArgument, "path parameter %s is required", name)
	}
	if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
		return "", core.Errorf(core.CodeInvalidArgument, "path parameter %s has characters that are not allowed (a NUL, or bytes that are not UTF-8)", name)
	}
	return v, nil
}

// target reads what most capacity routes act on: the object named by the
// path's id and the If-Match version the caller expects it at (0: none).
func target(c echo.Context) (id string, version int64, err error) {
	if id, err = param(c, "id"); err != nil {
		return "", 0, err
	}
	version, err = ifMatch(c)
	return id, version, err
}

// targetNoBody is target for a route that takes no body (cordon, release,
// …): a body that is sent anyway is held to bindOptional's rules.
func targetNoBody(c echo.Context) (id string, version int64, err error) {
	if id, version, err = target(c); err != nil {
		return "", 0, err
	}
	return id, version, bindOptional(c)
}

// unversionedNoBody is what a route reads that takes no body and whose
// command has no version check (revoke a token, delete or rotate a webhook
// endpoint): If-Match is refused (noIfMatch) and a body sent anyway is held
// to bindOptional's rules, so neither is silently dropped.
func unversionedNoBody(c echo.Context) error {
	if err := noIfMatch(c); err != nil {
		return err
	}
	return bindOptional(c)
}

// bindTarget is target followed by bindBody into v.
func bindTarget(c echo.Context, v any) (id string, version int64, err error) {
	if id, version, err = target(c); err != nil {
		return "", 0, err
	}
	return id, version, bindBody(c, v)
}

// readBody reads the whole body (bounded by the body limit middleware),
// without surrounding white space; no body reads as empty.
func readBody(c echo.Context) ([]byte, error) {
	req := c.Request()
	if req.Body == nil {
		return nil, nil
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return nil, he // over the body limit: echo's 413
		}
		return nil, core.Wrap(core.CodeInvalidArgument, err, "could not read request body")
	}
	return bytes.TrimSpace(body), nil
}

// ifMatch reads If-Match as the version a command must find, 0 when the
// header is absent or "*" (any version). The version may be quoted, as an
// entity tag is, so a client that echoes ETag-style values works too. A
// version of 0 or less is refused rather than read as "no check": a client
// that sends a precondition must never have it silently dropped.
func ifMatch(c echo.Context) (int64, error) {
	values := c.Request().Header.Values(headerIfMatch)
	if len(values) == 0 {
		return 0, nil
	}
	v := strings.TrimSpace(values[0])
	if len(values) > 1 || strings.Contains(v, ",") {
		return 0, core.Errorf(core.CodeInvalidArgument, "If-Match takes one version")
	}
	if v == "*" {
		return 0, nil
	}
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || !isDigits(v) {
		return 0, core.Errorf(core.CodeInvalidArgument, "If-Match must be a version, a positive integer such as 3")
	}
	return n, nil
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// noIfMatch refuses If-Match on routes whose command has no version check:
// ignoring a precondition the client relies on would turn its optimistic
// lock into a silent lost update.
func noIfMatch(c echo.Context) error {
	if c.Request().Header.Get(headerIfMatch) != "" {
		return core.Errorf(core.CodeInvalidArgument, "If-Match is not supported on %s", routeOf(c))
	}
	return nil
}

// noIdempotencyKey refuses an Idempotency-Key on a route that mints a
// credential and keeps no answer for a key (tokens, join tokens, a node's
// join, stream tickets, a webhook endpoint's rotated signing secret): a client
// retrying under a key expects one credential, and would otherwise get one
// live secret per retry, those whose answers were lost unknown to it and
// never revoked. Storing the answer instead would keep the secret in
// idempotency_keys for a day, where only its hash is kept now.
func noIdempotencyKey(c echo.Context) error {
	if len(c.Request().Header.Values(headerIdempotencyKey)) > 0 {
		return core.Errorf(core.CodeInvalidArgument,
			"Idempotency-Key is not supported on %s: it mints a new secret each time; send it once, without a key",
			routeOf(c))
	}
	return nil
}

// idempotencyKey reads the optional Idempotency-Key header. Its shape is
// checked here so that a bad key is a clear 400 and never reaches the
// database as a constraint violation.
func idempotencyKey(c echo.Context) (string, error) {
	values := c.Request().Header.Values(headerIdempotencyKey)
	if len(values) == 0 {
		return "", nil
	}
	k := values[0]
	ok := len(values) == 1 && k != "" && len(k) <= maxIdempotencyKey
	for i := 0; ok && i < len(k); i++ {
		ok = k[i] >= 0x20 && k[i] <= 0x7e
	}
	if !ok {
		return "", core.Errorf(core.CodeInvalidArgument,
			"Idempotency-Key must be one value of 1 to %d printable ASCII characters", maxIdempotencyKey)
	}
	return k, nil
}

// storableText walks a decoded request and refuses any string holding NUL,
// which JSON allows (\u0000) and PostgreSQL text does not.
func storableText(v reflect.Value, field string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return storableText(v.Elem(), field)
		}
	case reflect.String:
		if strings.ContainsRune(v.String(), 0) {
			return core.Errorf(core.CodeInvalidArgument, "field %q must not contain NUL characters", field)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := storableText(v.Index(i), field); err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range v.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if err := storableText(v.Field(i), name); err != nil {
				return err
			}
		}
	}
	return nil
}
