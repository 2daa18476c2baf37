package queries

import (
	"encoding/base64"
	"strings"

	"github.com/bettercompute/compute/core"
)

// List cursors are opaque to clients: base64url of the keyset of the last
// item of the page, prefixed with the list's kind so that a cursor of one
// list is refused by another. They never expire: keyset pagination needs no
// server state.

func encodeCursor(kind string, parts ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "\x00" + strings.Join(parts, "\x00")))
}

// decodeCursor returns the n parts of a cursor of kind; "" is the start.
func decodeCursor(kind, cursor string, n int) ([]string, error) {
	if cursor == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	parts := strings.Split(string(raw), "\x00")
	if err != nil || len(parts) != n+1 || parts[0] != kind {
		return nil, core.Errorf(core.CodeInvalidArgument, "malformed cursor %q", cursor)
	}
	return parts[1:], nil
}
