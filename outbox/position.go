// Package outbox is the event log: appending events inside the caller's
// transaction, and reading them back in commit-safe order.
package outbox

import (
	"fmt"
	"strconv"

	"github.com/bettercompute/compute/core"
)

// Position is where an event sits in the log: its transaction id and its
// sequence number. Readers order by (TxID, Seq) and only read below the
// snapshot xmin, so nothing can ever appear behind a position.
type Position struct {
	TxID uint64
	Seq  int64
}

// Less orders positions as the reader does.
func (p Position) Less(q Position) bool {
	return p.TxID < q.TxID || (p.TxID == q.TxID && p.Seq < q.Seq)
}

// IsZero reports whether p is the start of the log.
func (p Position) IsZero() bool { return p.TxID == 0 && p.Seq == 0 }

// String is the opaque cursor clients see: 32 hex digits. It sorts as the
// position does.
func (p Position) String() string {
	return fmt.Sprintf("%016x%016x", p.TxID, uint64(p.Seq))
}

// ParsePosition reads a cursor made by Position.String. The empty string is
// the start of the log.
func ParsePosition(s string) (Position, error) {
	if s == "" {
		return Position{}, nil
	}
	if len(s) != 32 {
		return Position{}, core.Errorf(core.CodeInvalidArgument, "malformed cursor %q", core.Clip(s, 64))
	}
	tx, err1 := strconv.ParseUint(s[:16], 16, 64)
	seq, err2 := strconv.ParseUint(s[16:], 16, 63)
	if err1 != nil || err2 != nil {
		return Position{}, core.Errorf(core.CodeInvalidArgument, "malformed cursor %q", core.Clip(s, 64))
	}
	return Position{TxID: tx, Seq: int64(seq)}, nil
}
