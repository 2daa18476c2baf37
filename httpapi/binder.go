package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
)

// Bind decodes a JSON request body into v, strictly. A field the server does
// not know is rejected rather than ignored: a client that misspells
// "notAfter" must learn it now, not when its reservation ends early. Also
// rejected: a content type other than JSON, an empty body, a body that is
// only "null", malformed JSON, a value of the wrong type, and anything after
// the JSON value. Every rejection is INVALID_ARGUMENT with a message that
// names the problem and, where there is one, the field. A body over the
// server's limit stays echo's 413 error.
func Bind(c echo.Context, v any) error {
	req := c.Request()
	if req.Body == nil {
		return errBodyRequired
	}
	// The body limit middleware bounds how much this reads.
	body, err := io.ReadAll(req.Body)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he // over the body limit: echo's 413
		}
		return core.Wrap(core.CodeInvalidArgument, err, "could not read request body")
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return errBodyRequired
	}
	ct := req.Header.Get(echo.HeaderContentType)
	if ct == "" {
		return core.Errorf(core.CodeInvalidArgument, "Content-Type header is required: send application/json")
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || !(mt == echo.MIMEApplicationJSON || strings.HasSuffix(mt, "+json")) {
		return core.Errorf(core.CodeInvalidArgument, "content type %q is not supported: send application/json", ct)
	}
	if bytes.Equal(trimmed, []byte("null")) {
		return core.Errorf(core.CodeInvalidArgument, "request body must be a JSON object, not null")
	}

	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bindError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return core.Errorf(core.CodeInvalidArgument, "request body has data after the JSON value")
	}
	return nil
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
