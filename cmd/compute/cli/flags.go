// What the commands share in reading their flags and sending requests:
// times and durations, taints, If-Match, idempotency keys, response bodies.

package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/core"
	"github.com/spf13/cobra"
)

// bodyOf is the body of a generated response, or the call's error.
func bodyOf[R interface{ Bytes() []byte }](res R, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	return res.Bytes(), nil
}

// ifMatch is the --if-match flag: apply the change only to this version.
type ifMatch struct{ version string }

func (m *ifMatch) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&m.version, "if-match", "", "apply only if the object is at this version (optimistic concurrency)")
}

func (m ifMatch) ptr() *string {
	if m.version == "" {
		return nil
	}
	v := m.version
	return &v
}

// parseWhen reads a time flag: RFC 3339, "now", or "+DURATION" from now.
func parseWhen(flag, v string, now time.Time) (time.Time, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return time.Time{}, usagef("%s: missing", flag)
	case v == "now":
		// Not rounded down: the server books a window that already began
		// from the moment it receives it, so a start rounded down to the
		// second cut up to a second off a --duration.
		return now.UTC(), nil
	case strings.HasPrefix(v, "+"):
		d, err := time.ParseDuration(v[1:])
		if err != nil || d < 0 {
			return time.Time{}, usagef("%s: %q is not +DURATION (such as +10m or +1h30m)", flag, v)
		}
		return writable(flag, now.Add(d).UTC().Truncate(time.Second))
	}
	t, err := parseRFC3339(flag, v)
	if errors.Is(err, core.ErrNotRFC3339) {
		return time.Time{}, usagef("%s: %q is not a time: use RFC 3339 (2030-01-02T15:04:05Z), now, or +DURATION", flag, v)
	}
	return t, err
}

// parseRFC3339 reads a time flag as the API reads a time
// (core.ParseRFC3339), and refuses what the API would refuse, by the
// flag: the CLI sends a time re-encoded, so a time read more laxly (Go's
// parser took --start 2030-01-01T10:00:00+05:60 as +06:00) reached the
// server as another time, valid, and was booked. A time that is not RFC
// 3339 comes back as core.ErrNotRFC3339, for the caller's message.
func parseRFC3339(flag, v string) (time.Time, error) {
	t, err := core.ParseRFC3339(v)
	switch {
	case errors.Is(err, core.ErrLeapSecond):
		return time.Time{}, usagef("%s: %q is a leap second (seconds 60), which the API does not take: write :59.999999 or the next minute's :00", flag, v)
	case errors.Is(err, core.ErrBeyondYear9999):
		if _, err := writable(flag, t); err != nil {
			return time.Time{}, err
		}
		return time.Time{}, usagef("%s: %q is before the year 0 in UTC, which an RFC 3339 time cannot write", flag, v)
	case err != nil:
		return time.Time{}, err
	}
	return t, nil
}

// writable refuses a time after the year 9999 in UTC, which RFC 3339 (the
// API's times) cannot write: sent on, it failed in the request's encoding
// with a Go error naming MarshalJSON (a --start of 9999-12-31T23:00:00Z
// with --duration 2h).
func writable(flag string, t time.Time) (time.Time, error) {
	if t.UTC().Year() > 9999 {
		return time.Time{}, usagef("%s: %s is after the year 9999, which an RFC 3339 time cannot write", flag, t.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return t, nil
}

// parseEnd reads --end or --duration (exactly one).
func parseEnd(end, duration string, start, now time.Time) (time.Time, error) {
	switch {
	case end != "" && duration != "":
		return time.Time{}, usagef("--end, --duration: give one of them, not both")
	case duration != "":
		d, err := time.ParseDuration(duration)
		if err != nil || d <= 0 {
			return time.Time{}, usagef("--duration: %q is not a positive duration (such as 1h or 30m)", duration)
		}
		return writable("--duration", start.Add(d))
	case end != "":
		return parseWhen("--end", end, now)
	}
	return time.Time{}, usagef("--end, --duration: give one of them")
}

// parseTaint reads KEY[=VALUE].
func parseTaint(flag, v string) (client.Taint, error) {
	key, value, hasValue := strings.Cut(v, "=")
	if strings.TrimSpace(key) == "" {
		return client.Taint{}, usagef("%s: %q: want KEY or KEY=VALUE", flag, v)
	}
	t := client.Taint{Key: key}
	if hasValue {
		t.Value = &value
	}
	return t, nil
}

// newIdempotencyKey is a fresh key for one command: a retry of the same
// invocation repeats it, a new invocation does not.
func newIdempotencyKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "cli-" + hex.EncodeToString(b)
}
