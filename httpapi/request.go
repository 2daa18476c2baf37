// The parts of a request every route reads the same way: the strict JSON
// body, the If-Match and Idempotency-Key headers, ?limit= and ?cursor= of a
// list, and the page a list answers with. Routes read them only through
// this file, so each rule is written once.

package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/queries"
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
		return "", core.Errorf(core.CodeInvalidArgument, "path parameter %s has characters that are not allowed", name)
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

// decodeStrict is Bind's decoding of a non-empty body.
func decodeStrict(c echo.Context, body []byte, v any) error {
	ct := c.Request().Header.Get(echo.HeaderContentType)
	if ct == "" {
		return core.Errorf(core.CodeInvalidArgument, "Content-Type header is required: send application/json")
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || !(mt == echo.MIMEApplicationJSON || strings.HasSuffix(mt, "+json")) {
		return core.Errorf(core.CodeUnsupportedMediaType, "content type %q is not supported: send application/json", ct)
	}
	if bytes.Equal(body, []byte("null")) {
		return core.Errorf(core.CodeInvalidArgument, "request body must be a JSON object, not null")
	}

	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bindError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return core.Errorf(core.CodeInvalidArgument, "request body has data after the JSON value")
	}
	// The body is valid JSON of the right shape; now hold its keys to the
	// exact spelling of the tags.
	return knownKeys(body, reflect.TypeOf(v))
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// knownKeys refuses any object key in raw that is not, byte for byte, the
// JSON name of a field of t, walking nested structs, slices and maps of
// them. Types with their own UnmarshalJSON decide for themselves. raw has
// already been decoded into t, so a shape mismatch cannot occur here and
// anything that does not parse is left alone.
func knownKeys(raw json.RawMessage, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(jsonUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		for k, v := range obj {
			ft, ok := fields[k]
			if !ok {
				return core.Errorf(core.CodeInvalidArgument, "unknown field %q", k)
			}
			if err := knownKeys(v, ft); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for _, it := range items {
			if err := knownKeys(it, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		for _, v := range obj {
			if err := knownKeys(v, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFields adds the JSON names of t's fields to out, as encoding/json
// names them: the tag's name, else the Go name; "-" and unexported fields
// left out; untagged embedded structs promote their fields.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				jsonFields(et, out)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
}

var errBodyRequired = core.Errorf(core.CodeInvalidArgument, "request body is required")

// bindError words a decoding error for the caller, naming the field where
// encoding/json knows it.
func bindError(err error) error {
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax):
		return core.Wrap(core.CodeInvalidArgument, err, fmt.Sprintf("malformed JSON at byte %d", syntax.Offset))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return core.Wrap(core.CodeInvalidArgument, err, "malformed JSON: unexpected end of body")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return core.Wrap(core.CodeInvalidArgument, err,
				fmt.Sprintf("request body must be a JSON %s, not %s", jsonKind(typ.Type), typ.Value))
		}
		return core.Wrap(core.CodeInvalidArgument, err,
			fmt.Sprintf("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type), typ.Value))
	}
	// encoding/json has no type for an unknown field; its message is
	// `json: unknown field "name"`, which is already caller-safe.
	if msg, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return core.Wrap(core.CodeInvalidArgument, err, "unknown field "+msg)
	}
	// What remains comes from a field's own UnmarshalJSON (a malformed
	// time, say) and describes only the caller's input.
	return core.Wrap(core.CodeInvalidArgument, err, "invalid request body: "+strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go type the way a JSON client thinks of it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a " + t.Kind().String()
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

// listQuery is what a list request asks for: ?cursor= (the nextCursor of
// the previous page, "" for the first) and ?limit= (0 when absent: the
// list's default page size; each list applies its own maximum).
type listQuery struct {
	Cursor string
	Limit  int
}

// readListQuery reads ?cursor= and ?limit=. A limit that is not an
// integer from 1 to queries.MaxLimit is INVALID_ARGUMENT.
func readListQuery(c echo.Context) (listQuery, error) {
	return readListQueryMax(c, queries.MaxLimit)
}

// readListQueryMax is readListQuery for a list whose page is at most max.
func readListQueryMax(c echo.Context, max int) (listQuery, error) {
	n, err := queryLimit(c, max)
	return listQuery{Cursor: c.QueryParam("cursor"), Limit: n}, err
}

// readKeyedListQuery is readListQueryMax for a list whose service pages by
// a raw key (see wrapCursor): Cursor is the key the opaque cursor of kind
// wraps, "" for the first page.
func readKeyedListQuery(c echo.Context, kind string, max int) (listQuery, error) {
	q, err := readListQueryMax(c, max)
	if err != nil {
		return q, err
	}
	q.Cursor, err = unwrapCursor(kind, q.Cursor)
	return q, err
}

// queryLimit reads ?limit=: an integer from 1 to max, or 0 when absent.
// Every list reads its limit here, so every list caps it the same way.
func queryLimit(c echo.Context, max int) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, core.Errorf(core.CodeInvalidArgument, "limit must be an integer from 1 to %d, not %q", max, v)
	}
	return n, nil
}

// Page is one page of a list as every list route answers it:
// {"items": [...], "nextCursor": "..."}, nextCursor empty on the last page
// (GET /v1/events, which never ends, always gives one).
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// newPage is the Page of items (no items is [], never null).
func newPage[T any](items []T, nextCursor string) Page[T] {
	if items == nil {
		items = []T{}
	}
	return Page[T]{Items: items, NextCursor: nextCursor}
}

// mapPage is the Page of items, each converted by conv.
func mapPage[S, T any](items []S, nextCursor string, conv func(S) T) Page[T] {
	out := make([]T, len(items))
	for i, it := range items {
		out[i] = conv(it)
	}
	return Page[T]{Items: out, NextCursor: nextCursor}
}

// Cursor kinds of the lists whose service pages by a raw key (an id): the
// key is wrapped here into an opaque cursor of the one form every list
// uses (queries.EncodeCursor), so that clients never see or build keys.
const (
	cursorWebhookEndpoints = "webhook-endpoint"
	cursorWebhookAttempts  = "webhook-attempt"
)

// wrapCursor makes a service's raw next key opaque; "" (the last page)
// stays "".
func wrapCursor(kind, key string) string {
	if key == "" {
		return ""
	}
	return queries.EncodeCursor(kind, key)
}

// unwrapCursor is the raw key of an opaque cursor of kind; "" is the start.
func unwrapCursor(kind, cursor string) (string, error) {
	parts, err := queries.DecodeCursor(kind, cursor, 1)
	if err != nil || parts == nil {
		return "", err
	}
	return parts[0], nil
}
