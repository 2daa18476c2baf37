package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
)

// FuzzBindFieldNameCase feeds the strict binder bodies whose keys are the
// reservation request's own field names with letters flipped in case.
// encoding/json alone would take "POOLID" for "poolId"; the binder must
// accept a body exactly when every key is spelled as documented, and
// otherwise refuse it as INVALID_ARGUMENT naming the key.
func FuzzBindFieldNameCase(f *testing.F) {
	fields := map[string]reflect.Type{}
	jsonFields(reflect.TypeFor[createReservationRequest](), fields)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range fields {
			if !yield(n) {
				return
			}
		}
	})
	f.Add(uint64(0b11), uint64(0))
	f.Add(uint64(0b1), uint64(1))
	f.Add(^uint64(0), uint64(1)<<40)
	f.Fuzz(func(t *testing.T, include, flip uint64) {
		obj := map[string]any{}
		var variants []string
		bit := 0
		for i, n := range names {
			if include&(1<<(i%64)) == 0 {
				continue
			}
			k := []rune(n)
			for j, r := range k {
				if unicode.IsLetter(r) && flip&(1<<(bit%64)) != 0 {
					if unicode.IsUpper(r) {
						k[j] = unicode.ToLower(r)
					} else {
						k[j] = unicode.ToUpper(r)
					}
				}
				bit++
			}
			if string(k) != n {
				variants = append(variants, string(k))
			}
			obj[string(k)] = nil // null fits every field's type
		}
		body, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/v1/reservations", strings.NewReader(string(body)))
		req.Header.Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
		c := echo.New().NewContext(req, httptest.NewRecorder())
		var dst createReservationRequest
		err = decodeStrict(c, body, &dst)
		if len(variants) == 0 {
			if err != nil {
				t.Fatalf("%s: exact field names refused: %v", body, err)
			}
			return
		}
		if core.CodeOf(err) != core.CodeInvalidArgument {
			t.Fatalf("%s: case variants %q accepted or misreported: %v", body, variants, err)
		}
		if !slices.ContainsFunc(variants, func(v string) bool { return strings.Contains(err.Error(), `"`+v+`"`) }) {
			t.Fatalf("%s: the error %q names none of the variants %q", body, err, variants)
		}
	})
}

// FuzzPathIDEscapes requests a path whose id is escaped in every way a
// client may escape it (the standard escaping, every byte escaped, only
// "/" escaped) and checks that the handler sees the id exactly, decoded
// once: ids of MIG instances and slots contain "/", and an id may contain
// "%" itself. A malformed escape is INVALID_ARGUMENT, never a 500.
func FuzzPathIDEscapes(f *testing.F) {
	for _, id := range []string{"GPU-x/mig-1", "a%b", "a%2Fb", "ü/ß", "a b", "..", "x?y#z", "%zz"} {
		f.Add(id, uint8(0))
		f.Add(id, uint8(1))
		f.Add(id, uint8(2))
	}
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(nil)
	e.Use(unescapeParams())
	e.GET("/v1/things/:id", func(c echo.Context) error { return c.String(http.StatusOK, c.Param("id")) })
	f.Fuzz(func(t *testing.T, id string, how uint8) {
		if id == "" || strings.ContainsAny(id, "\x00") {
			return
		}
		var escaped string
		switch how % 3 {
		case 0:
			escaped = url.PathEscape(id)
		case 1:
			for _, b := range []byte(id) {
				escaped += "%" + strings.ToUpper(hexByte(b))
			}
		default:
			if strings.Contains(id, "%") || !validPathChars(id) {
				return // only "/" escaped is a valid URL only for plain ids
			}
			escaped = strings.ReplaceAll(id, "/", "%2F")
		}
		req, err := http.NewRequest(http.MethodGet, "http://api.test/v1/things/"+escaped, nil)
		if err != nil {
			return // not a URL a client can send
		}
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q as %q: %d %s", id, escaped, rec.Code, rec.Body)
		}
		if rec.Code == http.StatusOK && rec.Body.String() != id {
			t.Fatalf("%q as %q reached the handler as %q", id, escaped, rec.Body)
		}
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest && rec.Code != http.StatusNotFound {
			t.Fatalf("%q as %q: unexpected %d %s", id, escaped, rec.Code, rec.Body)
		}
	})
}

func hexByte(b byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[b>>4], digits[b&15]})
}

// validPathChars reports whether id is made of characters a path segment
// may hold unescaped.
func validPathChars(id string) bool {
	for _, r := range id {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-._~/!$&'()*+,;=:@", r)) {
			return false
		}
	}
	return true
}
