package outbox_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/outbox"
)

// FuzzParsePosition: a cursor from a client never panics the parser; a
// refused one is INVALID_ARGUMENT; an accepted one is 32 hex digits (or
// empty, the start of the log) naming a position whose String is the same
// cursor in lower case, and which parses back to itself.
func FuzzParsePosition(f *testing.F) {
	f.Add(strings.Repeat("f", 5000)) // a huge cursor
	f.Fuzz(func(t *testing.T, s string) {
		p, err := outbox.ParsePosition(s)
		if err != nil {
			require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%q: %v", s, err)
			require.LessOrEqual(t, len(err.Error()), 400, "the refusal quotes a clipped cursor (64 bytes, at most 4 characters each once quoted), not the whole of it")
			return
		}
		if s == "" {
			require.True(t, p.IsZero())
			return
		}
		require.GreaterOrEqual(t, p.Seq, int64(0), "%q", s)
		require.Equal(t, strings.ToLower(s), p.String(), "%q", s)
		back, err := outbox.ParsePosition(p.String())
		require.NoError(t, err)
		require.Equal(t, p, back)
	})
}

// FuzzPositionOrder: cursors sort as positions do, so a client (or a
// database index on the text) may compare them without parsing.
func FuzzPositionOrder(f *testing.F) {
	f.Fuzz(func(t *testing.T, tx1 uint64, seq1 int64, tx2 uint64, seq2 int64) {
		if seq1 < 0 || seq2 < 0 {
			return // sequence numbers start at 1 and only grow
		}
		p, q := outbox.Position{TxID: tx1, Seq: seq1}, outbox.Position{TxID: tx2, Seq: seq2}
		require.Equal(t, p.Less(q), p.String() < q.String(), "%+v vs %+v", p, q)
		back, err := outbox.ParsePosition(p.String())
		require.NoError(t, err)
		require.Equal(t, p, back)
	})
}
