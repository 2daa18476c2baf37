package httpapi

import (
	"errors"
	"time"

	"github.com/bettercompute/compute/core"
)

// parseTime reads a required RFC 3339 time (core.ParseRFC3339), field
// naming it in a refusal (INVALID_ARGUMENT). It is the one parser of every
// time a request carries: reservations' start and end, an extension's end,
// a token's expiresAt, the device holders' ?at= and a webhook recover's
// since.
func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, core.Errorf(core.CodeInvalidArgument, "field %q is required", field)
	}
	t, err := core.ParseRFC3339(s)
	switch {
	case errors.Is(err, core.ErrLeapSecond):
		return time.Time{}, core.Errorf(core.CodeInvalidArgument,
			"field %q is a leap second (seconds 60), which the API does not take: write :59.999999 or the next minute's :00, not %q", field, s)
	case errors.Is(err, core.ErrBeyondYear9999):
		return time.Time{}, core.Errorf(core.CodeInvalidArgument,
			"field %q must be a time from year 0 to 9999 in UTC, not %q", field, s)
	case err != nil:
		return time.Time{}, core.Errorf(core.CodeInvalidArgument,
			"field %q must be an RFC 3339 time such as 2026-01-02T15:04:05Z, not %q", field, s)
	}
	return t, nil
}
