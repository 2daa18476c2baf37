package commands

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// A command without If-Match that loses a version race runs again; with
// If-Match the conflict is the answer; other errors are never retried.
func TestRetryUnversioned(t *testing.T) {
	lost := zeroRowsConflict(0, nil, "reservation r1")
	require.Equal(t, core.CodeConflict, core.CodeOf(lost))

	calls := 0
	err := retryUnversioned(0, func() error {
		if calls++; calls < unversionedAttempts {
			return lost
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, unversionedAttempts, calls)

	calls = 0
	err = retryUnversioned(7, func() error { calls++; return lost })
	require.ErrorIs(t, err, errChangedConcurrently)
	require.Equal(t, 1, calls, "If-Match: no retry")

	calls = 0
	other := core.Errorf(core.CodeConflict, "reservation r1 cannot go from released to released")
	err = retryUnversioned(0, func() error { calls++; return other })
	require.True(t, errors.Is(err, other))
	require.Equal(t, 1, calls, "an illegal transition is not a lost race")
}
