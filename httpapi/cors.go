package httpapi

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// What browsers may send and read across origins. Requests carry the
// bearer token in Authorization (never a cookie, so no credentials mode);
// the headers exposed are the ones a client acts on.
var (
	corsAllowMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete}
	corsAllowHeaders = []string{echo.HeaderAuthorization, echo.HeaderContentType, headerIdempotencyKey,
		headerIfMatch, "Last-Event-ID"}
	corsExposeHeaders = []string{"ETag", echo.HeaderLocation, "Retry-After", headerRateLimitLimit,
		headerRateLimitRemaining, headerRateLimitReset, echo.HeaderXRequestID}
)

// corsMaxAge is how long, in seconds, a browser may cache a preflight.
const corsMaxAge = 600

// cors lets pages served from origins call the API from a browser. Origins
// are exact (scheme://host[:port], compared as strings): no wildcard, no
// subdomain or pattern matching, which echo would otherwise apply. No
// origins means no CORS at all: no headers, and preflights get no answer
// a browser accepts.
func cors(origins []string) echo.MiddlewareFunc {
	if len(origins) == 0 {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	allowed := make(map[string]bool, len(origins))
	for _, o := range origins {
		allowed[o] = true
	}
	return middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOriginFunc: func(origin string) (bool, error) { return allowed[origin], nil },
		AllowMethods:    corsAllowMethods,
		AllowHeaders:    corsAllowHeaders,
		ExposeHeaders:   corsExposeHeaders,
		MaxAge:          corsMaxAge,
	})
}
