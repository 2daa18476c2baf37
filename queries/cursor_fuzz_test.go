package queries

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

// cursorKinds are the list cursors of this package and how many parts each
// carries.
var cursorKinds = []struct {
	kind  string
	parts int
}{{"rsv", 1}, {"node", 1}, {"usage", 2}}

// FuzzDecodeCursor: a cursor from a client never panics the decoder; a
// refused one is INVALID_ARGUMENT; an accepted one has exactly the parts
// of its kind, none holding the separator, and encoding them again gives
// a cursor that decodes to the same parts (so every page's nextCursor is
// read back as written).
func FuzzDecodeCursor(f *testing.F) {
	f.Fuzz(func(t *testing.T, kind uint8, cursor string) {
		k := cursorKinds[int(kind)%len(cursorKinds)]
		parts, err := DecodeCursor(k.kind, cursor, k.parts)
		if err != nil {
			require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%q: %v", cursor, err)
			return
		}
		if cursor == "" {
			require.Nil(t, parts)
			return
		}
		require.Len(t, parts, k.parts, "%q", cursor)
		for _, p := range parts {
			require.NotContains(t, p, "\x00")
		}
		again, err := DecodeCursor(k.kind, EncodeCursor(k.kind, parts...), k.parts)
		require.NoError(t, err)
		require.Equal(t, parts, again)
		// A cursor of one list is refused by every other.
		for _, other := range cursorKinds {
			if other.kind != k.kind {
				_, err := DecodeCursor(other.kind, cursor, other.parts)
				require.Error(t, err, "%s cursor %q accepted as %s", k.kind, cursor, other.kind)
			}
		}
	})
}

// FuzzCursorRoundTrip: whatever keys a page ends on, its cursor decodes to
// them; keys holding the separator are the one thing a cursor cannot
// carry, and are refused rather than misread.
func FuzzCursorRoundTrip(f *testing.F) {
	f.Fuzz(func(t *testing.T, kind uint8, a, b string) {
		k := cursorKinds[int(kind)%len(cursorKinds)]
		parts := []string{a, b}[:k.parts]
		got, err := DecodeCursor(k.kind, EncodeCursor(k.kind, parts...), k.parts)
		if slices.ContainsFunc(parts, func(p string) bool { return strings.Contains(p, "\x00") }) {
			require.Error(t, err)
			return
		}
		require.NoError(t, err)
		require.Equal(t, parts, got)
	})
}
