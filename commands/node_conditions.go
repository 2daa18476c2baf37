package commands

// Conditions on a node row: what the system observed about the node
// (NodeUnreachable from liveness; GPUMissing, GPUMismatch, WorkloadsRefused
// and DiskNotEnforced from the inventory reconcile), kept as a jsonb array of
// NodeCondition, each with a reason, a message and since when.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/wire"
)

// decodeNodeConditions reads the conditions of a locked node row.
func decodeNodeConditions(n db.NodeLivenessLockRow) ([]NodeCondition, error) {
	var conds []NodeCondition
	if len(n.Conditions) > 0 {
		if err := json.Unmarshal(n.Conditions, &conds); err != nil {
			return nil, fmt.Errorf("decode conditions of node %s: %w", n.ID, err)
		}
	}
	return conds, nil
}

// writeNodeConditions replaces the conditions of the locked node row n with
// conds, guarded by the version it was read at (its state and scheduling
// reasons unchanged), and returns the scheduling reasons for the event that
// follows (never nil: the event schema wants an array). The row's version
// moves by one.
func writeNodeConditions(ctx context.Context, q *db.Queries, n db.NodeLivenessLockRow, conds []NodeCondition) ([]string, error) {
	condJSON, err := json.Marshal(conds)
	if err != nil {
		return nil, fmt.Errorf("encode conditions: %w", err)
	}
	rows, err := q.NodeLivenessUpdate(ctx, db.NodeLivenessUpdateParams{ID: n.ID, Version: n.Version,
		State: n.State, NoScheduleReasons: n.NoScheduleReasons, Conditions: condJSON})
	if err := zeroRowsConflict(rows, err, "node "+n.ID); err != nil {
		return nil, err
	}
	if n.NoScheduleReasons == nil {
		return []string{}, nil
	}
	return n.NoScheduleReasons, nil
}

// setNodeCondition returns conds with condition typ raised with reason and
// message (in its place, keeping the time it was first raised, if it was
// raised before; else last), or without it when message is "".
func setNodeCondition(conds []NodeCondition, typ, reason, message string, now time.Time) []NodeCondition {
	out := make([]NodeCondition, 0, len(conds)+1)
	raised := NodeCondition{Condition: core.Condition{Type: typ, Status: true, Reason: reason, Message: message}, Since: now}
	found := false
	for _, c := range conds {
		if c.Type != typ {
			out = append(out, c)
			continue
		}
		found = true
		if message != "" {
			raised.Since = c.Since
			out = append(out, raised)
		}
	}
	if !found && message != "" {
		out = append(out, raised)
	}
	return out
}

// sameConditions compares conditions by what they say and since when.
func sameConditions(a, b []NodeCondition) bool {
	return slices.EqualFunc(a, b, func(x, y NodeCondition) bool {
		return x.Condition == y.Condition && x.Since.Equal(y.Since)
	})
}

// boundedReason is a daemon's free text made fit to keep: valid UTF-8
// without NUL (both U+FFFD: a condition is jsonb, which refuses \u0000, and
// one refused reason would fail the whole inventory it came with), without
// surrounding space, and cut at a rune boundary to at most limit bytes
// (ending in "…" when cut).
func boundedReason(s string, limit int) string {
	s = strings.TrimSpace(strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD"))
	if len(s) <= limit {
		return s
	}
	const ellipsis = "…"
	cut := limit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// diskNotEnforced is the reason and message of a node's DiskNotEnforced
// condition for the disk limit its daemon reports, or "" to clear it: a
// daemon that refuses workloads (refused) runs none to limit, and one
// that does not say (an earlier release) is not judged.
func diskNotEnforced(limit, refused string) (reason, message string) {
	if refused != "" {
		return "", ""
	}
	switch limit {
	case wire.DiskLimitMeasured:
		return "Measured", "the node's daemon only measures each allocation's /work, every 10 s (no loop devices or " +
			"mkfs.ext4 on the node): an allocation can write past its disk in between"
	case wire.DiskLimitNone:
		return "NotIsolated", "the node's daemon runs workloads without isolation (--workload-isolation=none): " +
			"nothing limits their disk"
	}
	return "", ""
}
