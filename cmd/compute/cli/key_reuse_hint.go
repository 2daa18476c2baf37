package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bettercompute/compute/client"
)

// A write sent with a user-given --idempotency-key is safe to repeat only
// if the repeat sends the same request. A time given relative to now
// ("now", "+1h") is resolved afresh on every run, so the repeat asks for
// other times and the server refuses the key as reused "with a different
// request", although the user ran the very same command line. The answer
// then says which flags made the difference, and how to write them.

// hintedError is err with a line of advice printed after its message.
type hintedError struct {
	err  error
	hint string
}

func (e hintedError) Error() string { return e.err.Error() }
func (e hintedError) Unwrap() error { return e.err }

// relativeTime reports whether v, a --start or --end, is relative to now.
func relativeTime(v string) bool {
	v = strings.TrimSpace(v)
	return v == "now" || strings.HasPrefix(v, "+")
}

// keyReusedHint adds to an IDEMPOTENCY_KEY_REUSED answer why a repeat of
// the same command line differs: relative names the flags (with their
// values) whose times moved; by is a --by, which adds to an end the first
// run may have moved already.
func keyReusedHint(err error, keyGiven bool, relative []string, by bool) error {
	var apiErr *client.APIError
	if !keyGiven || !errors.As(err, &apiErr) || apiErr.Code != client.ErrorCodeIDEMPOTENCYKEYREUSED {
		return err
	}
	switch {
	case len(relative) > 0:
		return hintedError{err: err, hint: fmt.Sprintf("%s: a time relative to now is a new time on every run, so this run "+
			"asked for other times than the one that first sent this --idempotency-key. To repeat a whole command "+
			"safely, give its times as RFC 3339 (2030-01-02T15:04:05Z).", strings.Join(relative, ", "))}
	case by:
		return hintedError{err: err, hint: "--by adds to the end it reads, which the run that first sent this " +
			"--idempotency-key may have moved already: `compute reservations get` shows the end now."}
	}
	return err
}
