package cli

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/bettercompute/compute/client"
)

// A token's lifetime has two names, one per side: `tokens create
// --expires-in` takes a duration from now (720h), and the API takes, and
// every answer shows, the instant it ends, expiresAt (RFC 3339). The CLI
// turns the one into the other with its own clock, prints the instant
// under the API's name, and names both in an error about either.

// minExpiresIn is the shortest --expires-in: a token that ends within the
// second it is asked for has ended before anyone can use it, and would
// reach the server as a time already past.
const minExpiresIn = time.Second

// durationShaped is what time.ParseDuration reads, numbers with units; one
// of this shape that does not parse is too long for a time.Duration.
var durationShaped = regexp.MustCompile(`^[-+]?([0-9]*(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$`)

// daysShaped is a count of days, a unit Go's durations do not have.
var daysShaped = regexp.MustCompile(`^\+?([0-9]+)d$`)

// parseExpiresIn reads --expires-in, refusing, by the flag and with an
// example, what is not a lifetime: no value, not a duration, days, too
// long for a duration, zero or negative, under a second. Each is bad
// input (exit 2), found before anything is sent.
func parseExpiresIn(v string) (time.Duration, error) {
	const want = "how long the token stays valid from now, such as 720h (30 days), 90m or 1h30m"
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, usagef("--expires-in: missing: give %s", want)
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil && daysShaped.MatchString(v):
		days, _ := strconv.Atoi(daysShaped.FindStringSubmatch(v)[1])
		return 0, usagef("--expires-in: %q: days are not a unit here: write hours (%dh is %d days)", v, days*24, days)
	case err != nil && durationShaped.MatchString(v) && !strings.HasPrefix(v, "-"):
		return 0, usagef("--expires-in: %q is too long: the longest is %s (about 292 years)", v, maxExpiresIn())
	case err != nil && durationShaped.MatchString(v), err == nil && d <= 0:
		return 0, usagef("--expires-in: %q is not a positive duration: give %s", v, want)
	case err != nil:
		return 0, usagef("--expires-in: %q is not a duration: give %s", v, want)
	case d < minExpiresIn:
		return 0, usagef("--expires-in: %q is shorter than %s: the token would expire before it could be used", v, minExpiresIn)
	}
	return d, nil
}

// maxExpiresIn is the longest duration --expires-in reads, in whole hours.
func maxExpiresIn() string {
	return strconv.FormatInt(int64(time.Duration(math.MaxInt64)/time.Hour), 10) + "h"
}

// expiresAtHint adds to the server's refusal of a token's expiresAt (not
// in the future, past the issuing token's expiry, past the server's
// maximum lifetime, or missing where one is required) which flag made
// that time, or that the flag is the way to give one: the server's
// message names the API's field, which the command line has no flag of.
func expiresAtHint(err error, expiresIn string, at *time.Time) error {
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || !strings.Contains(apiErr.Message, "expiresAt") ||
		(apiErr.Code != client.ErrorCodeINVALIDARGUMENT && apiErr.Code != client.ErrorCodeTOKENLIFETIMEEXCEEDED) {
		return err
	}
	if at == nil {
		return hintedError{err: err, hint: "Give --expires-in: how long the token stays valid from now, such as 720h for 30 days; " +
			"the API calls the time it ends expiresAt."}
	}
	return hintedError{err: err, hint: fmt.Sprintf("--expires-in %s asked for expiresAt %s (now, by this machine's clock, "+
		"plus %s).", expiresIn, at.Format(time.RFC3339), expiresIn)}
}
