// The list half of request handling: ?limit= and ?cursor= of a list, the
// page every list answers with, and the opaque cursors of lists whose
// service pages by a raw key.

package httpapi

import (
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/queries"
)

// listQuery is what a list request asks for: ?cursor= (the nextCursor of
// the previous page, "" for the first) and ?limit= (0 when absent: the
// list's default page size; each list applies its own maximum).
type listQuery struct {
	Cursor string
	Limit  int
}

// readListQuery reads ?cursor= and ?limit=. A limit that is not an
// integer from 1 to queries.MaxLimit is INVALID_ARGUMENT.
func readListQuery(c echo.Context) (listQuery, error) {
	return readListQueryMax(c, queries.MaxLimit)
}

// readListQueryMax is readListQuery for a list whose page is at most max.
func readListQueryMax(c echo.Context, max int) (listQuery, error) {
	n, err := queryLimit(c, max)
	return listQuery{Cursor: c.QueryParam("cursor"), Limit: n}, err
}

// readKeyedListQuery is readListQueryMax for a list whose service pages by
// a raw key (see wrapCursor): Cursor is the key the opaque cursor of kind
// wraps, "" for the first page.
func readKeyedListQuery(c echo.Context, kind string, max int) (listQuery, error) {
	q, err := readListQueryMax(c, max)
	if err != nil {
		return q, err
	}
	q.Cursor, err = unwrapCursor(kind, q.Cursor)
	return q, err
}

// queryLimit reads ?limit=: an integer from 1 to max, or 0 when absent.
// Every list reads its limit here, so every list caps it the same way.
func queryLimit(c echo.Context, max int) (int, error) {
	v := c.QueryParam("limit")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, core.Errorf(core.CodeInvalidArgument, "limit must be an integer from 1 to %d, not %q", max, core.Clip(v, 64))
	}
	return n, nil
}

// Page is one page of a list as every list route answers it:
// {"items": [...], "nextCursor": "..."}, nextCursor empty on the last page
// (GET /v1/events, which never ends, always gives one).
type Page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"nextCursor"`
}

// newPage is the Page of items (no items is [], never null).
func newPage[T any](items []T, nextCursor string) Page[T] {
	if items == nil {
		items = []T{}
	}
	return Page[T]{Items: items, NextCursor: nextCursor}
}

// mapPage is the Page of items, each converted by conv.
func mapPage[S, T any](items []S, nextCursor string, conv func(S) T) Page[T] {
	out := make([]T, len(items))
	for i, it := range items {
		out[i] = conv(it)
	}
	return Page[T]{Items: out, NextCursor: nextCursor}
}

// Cursor kinds of the lists whose service pages by a raw key (an id): the
// key is wrapped here into an opaque cursor of the one form every list
// uses (queries.EncodeCursor), so that clients never see or build keys.
const (
	cursorWebhookEndpoints = "webhook-endpoint"
	cursorWebhookAttempts  = "webhook-attempt"
	cursorInstances        = "instance"
)

// wrapCursor makes a service's raw next key opaque; "" (the last page)
// stays "".
func wrapCursor(kind, key string) string {
	if key == "" {
		return ""
	}
	return queries.EncodeCursor(kind, key)
}

// unwrapCursor is the raw key of an opaque cursor of kind; "" is the start.
func unwrapCursor(kind, cursor string) (string, error) {
	parts, err := queries.DecodeCursor(kind, cursor, 1)
	if err != nil || parts == nil {
		return "", err
	}
	return parts[0], nil
}
