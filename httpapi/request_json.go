// Strict JSON decoding for Bind: unknown fields are refused with their
// exact, case-sensitive name (encoding/json alone matches names without
// regard to case), bytes that are not UTF-8 are refused rather than
// replaced, and decoding errors become messages that name the field.

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
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
)

// decodeStrict is Bind's decoding of a non-empty body.
func decodeStrict(c echo.Context, body []byte, v any) error {
	// Content-Type is one value (RFC 9110, 8.3): of two, reading the first
	// would take the body as the sender may not have meant it.
	if n := len(c.Request().Header.Values(echo.HeaderContentType)); n > 1 {
		return core.Errorf(core.CodeInvalidArgument, "Content-Type is given %d times; give it once", n)
	}
	ct := c.Request().Header.Get(echo.HeaderContentType)
	if ct == "" {
		return core.Errorf(core.CodeInvalidArgument, "Content-Type header is required: send application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !(mt == echo.MIMEApplicationJSON || strings.HasSuffix(mt, "+json")) {
		return core.Errorf(core.CodeUnsupportedMediaType, "content type %q is not supported: send application/json", ct)
	}
	// The body is read as UTF-8, so a charset that is not would have its
	// text read as other characters (Latin-1's "Ã©" stored as "é"):
	// refused rather than reinterpreted.
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return core.Errorf(core.CodeUnsupportedMediaType, "charset %q is not supported: JSON is UTF-8; send it as UTF-8, with no charset or charset=utf-8",
			core.Clip(cs, 64))
	}
	// A compressed body would be read as malformed JSON; say what is
	// wrong instead (RFC 9110, 15.5.16: 415 for an unsupported coding).
	if ce := c.Request().Header.Get(echo.HeaderContentEncoding); ce != "" && !strings.EqualFold(ce, "identity") {
		return core.Errorf(core.CodeUnsupportedMediaType, "content encoding %q is not supported: send the JSON uncompressed",
			core.Clip(ce, 64))
	}
	// JSON text is UTF-8 (RFC 8259, 8.1); encoding/json would put U+FFFD
	// for each byte that is not and go on, storing text the caller did
	// not send.
	if !utf8.Valid(body) {
		return core.Errorf(core.CodeInvalidArgument, "request body is not valid UTF-8: JSON text must be UTF-8")
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
	if key, ok := duplicateKey(body); ok {
		return core.Errorf(core.CodeInvalidArgument, "field %q appears twice in one object", core.Clip(key, 64))
	}
	if esc, ok := loneSurrogate(body); ok {
		return core.Errorf(core.CodeInvalidArgument,
			"request body has the escape %s, half of a UTF-16 surrogate pair without its other half: it is no character", esc)
	}
	// The body is valid JSON of the right shape; now hold its keys to the
	// exact spelling of the tags.
	return knownKeys(body, reflect.TypeOf(v))
}

// duplicateKey returns a key that appears twice in one object of body, at
// any depth. Parsers disagree on which of two equal keys wins
// (encoding/json takes the last, others the first or an error), so a body
// with one means different things to a proxy, a log reader and this
// server, and is refused. body has been decoded already: it is valid JSON.
func duplicateKey(body []byte) (string, bool) {
	type level struct {
		object  bool
		keys    map[string]bool
		wantKey bool // in an object, the next token is a key
	}
	var stack []*level
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false // io.EOF: the end of the body
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				stack = append(stack, &level{object: true, keys: map[string]bool{}, wantKey: true})
			case '[':
				stack = append(stack, &level{})
			default: // '}' or ']': a value of the enclosing level ends
				stack = stack[:len(stack)-1]
				if n := len(stack); n > 0 && stack[n-1].object {
					stack[n-1].wantKey = true
				}
			}
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			top := stack[n-1]
			if top.wantKey {
				key, _ := tok.(string)
				if top.keys[key] {
					return key, true
				}
				top.keys[key] = true
			}
			top.wantKey = !top.wantKey
		}
	}
}

// loneSurrogate returns the first \uXXXX escape in a string of body that
// is half of a UTF-16 surrogate pair without its other half. encoding/json
// decodes one as U+FFFD and goes on, as it does a byte that is not UTF-8,
// so the text stored would not be the text sent. body has been decoded
// already: it is valid JSON.
func loneSurrogate(body []byte) (string, bool) {
	escape := func(i int) (rune, bool) { // the \uXXXX at body[i:]
		if i+6 > len(body) || body[i] != '\\' || body[i+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(string(body[i+2:i+6]), 16, 16)
		return rune(n), err == nil
	}
	inString := false
	for i := 0; i < len(body); i++ {
		switch {
		case !inString:
			inString = body[i] == '"'
		case body[i] == '"':
			inString = false
		case body[i] == '\\':
			r, ok := escape(i)
			if !ok {
				i++ // a one-character escape: \" \\ \n …
				continue
			}
			if utf16.IsSurrogate(r) {
				low, ok := escape(i + 6)
				if !ok || utf16.DecodeRune(r, low) == unicode.ReplacementChar {
					return string(body[i : i+6]), true
				}
				i += 6
			}
			i += 5
		}
	}
	return "", false
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
				return core.Errorf(core.CodeInvalidArgument, "unknown field %q", core.Clip(k, 64))
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
				fmt.Sprintf("request body must be %s, not %s", jsonKind(typ.Type), typ.Value))
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
