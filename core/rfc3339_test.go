package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ParseRFC3339 reads exactly RFC 3339: a lower-case t and z, which Go's
// parser refuses, are taken; offsets of 24 h or 60 min and a comma, which
// it takes, are not; a leap second and a time past the year 9999 in UTC
// are refused by name.
func TestParseRFC3339(t *testing.T) {
	t.Parallel()
	noon := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for s, want := range map[string]struct {
		at  time.Time
		err error
	}{
		"2030-01-01T12:00:00Z":        {noon, nil},
		"2030-01-01t12:00:00z":        {noon, nil}, // RFC 3339, 5.6 NOTE
		"2030-01-01t13:00:00+01:00":   {noon, nil},
		"2030-01-02T11:59:00+23:59":   {noon, nil},
		"2030-01-01T12:00:00.5Z":      {noon.Add(500 * time.Millisecond), nil},
		"2030-01-01T12:00:00+24:00":   {err: ErrNotRFC3339},
		"2030-01-01T12:00:00-05:60":   {err: ErrNotRFC3339},
		"2030-01-01T12:00:00,5Z":      {err: ErrNotRFC3339},
		"2030-01-01 12:00:00Z":        {err: ErrNotRFC3339},
		"2030-01-01T12:00:00":         {err: ErrNotRFC3339},
		"2030-01-01":                  {err: ErrNotRFC3339},
		"":                            {err: ErrNotRFC3339},
		"2030-06-30T23:59:60Z":        {err: ErrLeapSecond},
		"2030-07-01t00:59:60.5+01:00": {err: ErrLeapSecond},
		"2030-06-30T23:59:60+24:00":   {err: ErrNotRFC3339},
		"2030-06-30T23:59:61Z":        {err: ErrNotRFC3339},
		"9999-12-31T23:59:59-23:59":   {err: ErrBeyondYear9999},
	} {
		got, err := ParseRFC3339(s)
		if want.err != nil {
			require.ErrorIs(t, err, want.err, s)
			continue
		}
		require.NoError(t, err, s)
		require.True(t, want.at.Equal(got), "%s: %s", s, got)
	}
}
