package httpapi

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
)

// strictQuery refuses a request whose query string does not parse: a pair
// with a malformed percent-escape or a semicolon. net/url drops such pairs
// silently, so without this `?after=%zz` or `?after=a;b` would read as no
// cursor at all and answer the first page instead of an error.
func strictQuery() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if raw := c.Request().URL.RawQuery; raw != "" {
				if _, err := url.ParseQuery(raw); err != nil {
					return core.Errorf(core.CodeInvalidArgument, "malformed query string: %v", err)
				}
			}
			return next(c)
		}
	}
}

// queryParams is the middleware of every route: names are the query
// parameters it takes (none, for most writes and reads of one object). A
// request with any other is INVALID_ARGUMENT, as is one that gives a
// parameter twice: a filter the route does not have (?state= on a list
// without one), a misspelt one or one in the wrong case would otherwise be
// ignored, and the answer would be an unfiltered page that looks like a
// filtered one; on a write, `POST /v1/reservations?dryRun=true` booked and
// charged quota as if the caller had not asked for a dry run. A repeated
// one would be read as its first value only. A route registered without
// it takes any query string and ignores it
// (TestEveryRouteRefusesAnUnknownQueryParameter finds such a route). ?types= alone is a
// list and may be repeated (queryRepeats). An empty value is the same as
// the parameter left out, for every parameter.
func queryParams(names ...string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			params := c.QueryParams()
			for _, name := range slices.Sorted(maps.Keys(params)) {
				if !slices.Contains(names, name) {
					return core.Errorf(core.CodeInvalidArgument, "unknown query parameter %q: %s takes %s",
						core.Clip(name, 64), routeOf(c), takes(names))
				}
				if n := len(params[name]); n > 1 && !queryRepeats(name) {
					return core.Errorf(core.CodeInvalidArgument, "query parameter %s is given %d times; give it once", name, n)
				}
			}
			return next(c)
		}
	}
}

// queryRepeats reports whether a query parameter is a list that may be
// given more than once: ?types=a&types=b is ?types=a,b.
func queryRepeats(name string) bool { return name == "types" }

// takes lists a route's query parameters for an error message.
func takes(names []string) string {
	if len(names) == 0 {
		return "no query parameter"
	}
	return strings.Join(names, ", ")
}

// queryEnum reads the enumerated filter name: "" when it is absent or
// empty (no filter), else one of values, exactly: values are
// case-sensitive, so another case is refused like any other unknown value
// (with a hint), never read as no filter or as an empty page.
func queryEnum(c echo.Context, name string, values []string) (string, error) {
	v := c.QueryParam(name)
	if v == "" || slices.Contains(values, v) {
		return v, nil
	}
	hint := ""
	if i := slices.IndexFunc(values, func(w string) bool { return strings.EqualFold(w, v) }); i >= 0 {
		hint = fmt.Sprintf(" (values are case-sensitive: %s)", values[i])
	}
	return "", core.Errorf(core.CodeInvalidArgument, "%s %q is not one of %s%s",
		name, core.Clip(v, 64), strings.Join(values, ", "), hint)
}
