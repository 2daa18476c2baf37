package core

import (
	"errors"
	"strings"
	"time"
)

// The API's times are RFC 3339 (section 5.6), and ParseRFC3339 is how
// they are read: by the API, for every time a request carries, and by the
// CLI, for every time flag, which it sends on re-encoded (so a time the
// CLI read more laxly than the API would reach the server as another,
// valid, time). Go's time.Parse is both stricter than RFC 3339 (a
// lower-case "t" and "z") and laxer (offsets of 24 h or 60 min, a comma
// before the fraction); ParseRFC3339 reads exactly RFC 3339, less leap
// seconds, within the years JSON can write.

// Why ParseRFC3339 refused a time.
var (
	// ErrNotRFC3339: not an RFC 3339 time.
	ErrNotRFC3339 = errors.New("not an RFC 3339 time")
	// ErrLeapSecond: an RFC 3339 time but for its second of 60. RFC 3339
	// allows a leap second (23:59:60 UTC, at the end of a June or
	// December); the API refuses one by name rather than map it to
	// :59.999999 or to the next minute (PostgreSQL's reading): no leap
	// second is scheduled, systems that smear them disagree on what such a
	// time is, and a window is never booked at a time the caller did not
	// write.
	ErrLeapSecond = errors.New("a leap second")
	// ErrBeyondYear9999: after the year 9999 (or before the year 0) in
	// UTC. RFC 3339 writes a year up to 9999 with any offset, so
	// 9999-12-31T23:59:59-23:59 is a time of the year 10000 in UTC, which
	// the database stores but JSON cannot write (time.Time.MarshalJSON
	// refuses years past 9999): a token issued with one answered 500 after
	// it was issued, and every list of tokens that held it from then on.
	ErrBeyondYear9999 = errors.New("outside the years 0 to 9999 in UTC")
)

// ParseRFC3339 reads s as an RFC 3339 time, or says why it is not one
// (ErrNotRFC3339, ErrLeapSecond, ErrBeyondYear9999; the last with the
// time read, for a message that shows it in UTC).
func ParseRFC3339(s string) (time.Time, error) {
	s = upperTAndZ(s)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !rfc3339Offset(s) {
		if leapSecond(s) {
			return time.Time{}, ErrLeapSecond
		}
		return time.Time{}, ErrNotRFC3339
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		return t, ErrBeyondYear9999
	}
	return t, nil
}

// upperTAndZ writes the "t" between date and time, and a "z" offset, in
// upper case: RFC 3339 allows either case (section 5.6, NOTE), Go's
// parser only the upper, so "2030-01-01t12:00:00z" was refused as not RFC
// 3339. Only those two places change; anything else stays as sent, and
// is judged by time.Parse.
func upperTAndZ(s string) string {
	if len(s) <= len("2006-01-02") || (s[10] != 't' && !strings.HasSuffix(s, "z")) {
		return s
	}
	b := []byte(s)
	if b[10] == 't' {
		b[10] = 'T'
	}
	if b[len(b)-1] == 'z' {
		b[len(b)-1] = 'Z'
	}
	return string(b)
}

// leapSecond reports whether s, which time.Parse refused, is an RFC 3339
// time but for a second of 60 (Go calls it "second out of range").
func leapSecond(s string) bool {
	const at = len("2006-01-02T15:04:")
	if len(s) < at+2 || s[at:at+2] != "60" {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s[:at]+"59"+s[at+2:])
	return err == nil && rfc3339Offset(s)
}

// rfc3339Offset reports whether s, which time.Parse read as RFC 3339,
// keeps to RFC 3339's offset and fraction: Go also takes an offset of
// +24:00 or +05:60 (a day, or an hour, away from what the sender wrote, if
// it was a typo) and a fraction after a comma, none of which RFC 3339
// allows, so a window sent with one was booked at a time the caller may
// not have meant. time.Parse has checked the shape: an offset is Z or
// ±hh:mm, in digits.
func rfc3339Offset(s string) bool {
	if strings.ContainsRune(s, ',') {
		return false
	}
	if strings.HasSuffix(s, "Z") {
		return true
	}
	hh, mm := s[len(s)-5:len(s)-3], s[len(s)-2:]
	return hh <= "23" && mm <= "59"
}
