package queries

import (
	"encoding/base64"
	"strings"

	"github.com/bettercompute/compute/core"
)

// List cursors are opaque to clients: base64url of the keyset of the last
// item of the page, prefixed with the list's kind so that a cursor of one
// list is refused by another. They never expire: keyset pagination needs no
// server state. Every list of the API uses this form: httpapi wraps the
// keys of the lists it serves from other packages (webhook endpoints and
// attempts) with the same two functions.

// EncodeCursor is the cursor of kind for the keyset parts.
func EncodeCursor(kind string, parts ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + "\x00" + strings.Join(parts, "\x00")))
}

// DecodeCursor returns the n parts of a cursor of kind; "" is the start
// (nil parts). Anything else is INVALID_ARGUMENT.
func DecodeCursor(kind, cursor string, n int) ([]string, error) {
	if cursor == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	parts := strings.Split(string(raw), "\x00")
	if err != nil || len(parts) != n+1 || parts[0] != kind {
		return nil, core.Errorf(core.CodeInvalidArgument, "malformed cursor %q", core.Clip(cursor, 64))
	}
	return parts[1:], nil
}
