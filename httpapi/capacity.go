package httpapi

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// CapacityRoutes are the write routes of the capacity core: operators build
// and run the fleet (sites, pools, nodes, devices, GPU modes, quotas) and
// tenants reserve, extend, release and cancel. Reads are served elsewhere,
// from read models; every response here carries the event position a reader
// passes as minPosition to see its own write.
func CapacityRoutes(h *commands.Handlers) Routes {
	if h == nil {
		panic("httpapi.CapacityRoutes: nil *commands.Handlers")
	}
	return func(r Router) {
		fleetRoutes(r, h)
		reservationRoutes(r, h)
	}
}

// Request headers the capacity routes read.
const (
	headerIfMatch        = "If-Match"
	headerIdempotencyKey = "Idempotency-Key"
)

// maxIdempotencyKey is the longest key idempotency_keys accepts.
const maxIdempotencyKey = 255

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
		return core.Errorf(core.CodeInvalidArgument, "If-Match is not supported on %s %s", c.Request().Method, c.Path())
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

// bindBody is Bind followed by the text check every capacity request
// needs: a string PostgreSQL cannot store must be the caller's 400, not a
// driver error surfacing as 500.
func bindBody(c echo.Context, v any) error {
	if err := Bind(c, v); err != nil {
		return err
	}
	return storableText(reflect.ValueOf(v), "")
}

// bindOptional binds a body to routes that need none (cordon, release, …):
// an empty body is fine, but a body that is sent is held to the same strict
// rules as any other, so `{"force":true}` is refused and not ignored.
func bindOptional(c echo.Context) error {
	req := c.Request()
	if req.Body == nil {
		return nil
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he // over the body limit: echo's 413
		}
		return core.Wrap(core.CodeInvalidArgument, err, "could not read request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	return Bind(c, &struct{}{})
}

// param returns a path parameter, refusing text PostgreSQL cannot store
// (NUL, invalid UTF-8), which a percent-encoded path can carry.
func param(c echo.Context, name string) (string, error) {
	v := c.Param(name)
	if v == "" {
		return "", core.Errorf(core.CodeInvalidArgument, "path parameter %s is required", name)
	}
	if !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
		return "", core.Errorf(core.CodeInvalidArgument, "path parameter %s has characters that are not allowed", name)
	}
	return v, nil
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

// requireFields refuses a request missing any field named in pairs
// (name, value, name, value, …): a shape check, so a client learns which
// field it forgot instead of a domain error about an empty value.
func requireFields(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if strings.TrimSpace(pairs[i+1]) == "" {
			return core.Errorf(core.CodeInvalidArgument, "field %q is required", pairs[i])
		}
	}
	return nil
}

// maxAmount is the largest count or size the API takes: 2^53-1, the
// largest integer every JSON client reads exactly. It also keeps sums of
// amounts (a pool's capacity rollup) inside PostgreSQL's bigint, which a
// near-2^63 value would overflow into a database error.
const maxAmount = 1<<53 - 1

// amount is a numeric request field with its JSON name, for checkAmounts.
type amount struct {
	field string
	value int64
}

// checkAmounts refuses an amount above maxAmount. Negative amounts are the
// commands' to refuse, with their own messages.
func checkAmounts(as ...amount) error {
	for _, a := range as {
		if a.value > maxAmount {
			return core.Errorf(core.CodeInvalidArgument, "field %q must be at most %d", a.field, int64(maxAmount))
		}
	}
	return nil
}

// parseTime reads a required RFC 3339 timestamp field.
func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, core.Errorf(core.CodeInvalidArgument, "field %q is required", field)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, core.Errorf(core.CodeInvalidArgument,
			"field %q must be an RFC 3339 time such as 2026-01-02T15:04:05Z, not %q", field, s)
	}
	return t, nil
}

// formatTime writes API times: RFC 3339 in UTC.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// taintJSON is a NoSchedule taint, or a toleration of one, as the API
// shows it. The write model stores it as the string "key" or "key=value",
// the form placement compares: a reservation tolerates a taint when it
// lists the same string. NoSchedule is the only effect there is, so it is
// not stored.
type taintJSON struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect,omitempty"`
}

// effectNoSchedule is the one taint effect: no new bookings on the node.
const effectNoSchedule = "NoSchedule"

var (
	taintKeyPattern   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._/-]{0,251}[A-Za-z0-9])?$`)
	taintValuePattern = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$`)
)

// encode checks the taint's shape and returns its stored form. The
// character sets keep "=" out of keys so the stored form parses back
// unambiguously.
func (t taintJSON) encode(field string) (string, error) {
	if t.Key == "" {
		return "", core.Errorf(core.CodeInvalidArgument, "field %q needs a key", field)
	}
	if !taintKeyPattern.MatchString(t.Key) {
		return "", core.Errorf(core.CodeInvalidArgument,
			"%s key %q must be letters, digits and . _ / -, starting and ending with a letter or digit", field, t.Key)
	}
	if !taintValuePattern.MatchString(t.Value) {
		return "", core.Errorf(core.CodeInvalidArgument,
			"%s value %q must be up to 63 letters, digits and . _ -, starting and ending with a letter or digit", field, t.Value)
	}
	if t.Effect != "" && t.Effect != effectNoSchedule {
		return "", core.Errorf(core.CodeInvalidArgument, "%s effect %q is not supported: the only effect is NoSchedule", field, t.Effect)
	}
	if t.Value == "" {
		return t.Key, nil
	}
	return t.Key + "=" + t.Value, nil
}

// encodeTaints encodes a list of taints or tolerations.
func encodeTaints(field string, ts []taintJSON) ([]string, error) {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		s, err := t.encode(field)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// decodeTaints turns stored taints back into the API form. It never fails:
// a taint written by another path without a value is just a key.
func decodeTaints(ss []string) []taintJSON {
	out := make([]taintJSON, 0, len(ss))
	for _, s := range ss {
		k, v, _ := strings.Cut(s, "=")
		out = append(out, taintJSON{Key: k, Value: v, Effect: effectNoSchedule})
	}
	return out
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
