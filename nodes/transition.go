package nodes

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/outbox"
)

// Condition is a condition raised on a node, with when it was raised.
type Condition struct {
	core.Condition
	Since time.Time `json:"since"`
}

// change is one liveness transition of a locked node row.
type change struct {
	to         core.State
	event      string
	addReason  string // added to no_schedule_reasons, if not there
	dropReason string // removed from no_schedule_reasons
	raise      *Condition
	clear      string // condition type removed
	data       map[string]any
}

// apply checks the transition against the node liveness table, writes the
// node row with a version guard (the row the placer locks FOR SHARE, so
// placement and liveness linearize), and appends exactly one event carrying
// the node's new version.
func apply(ctx context.Context, q *db.Queries, n db.NodeLivenessLockRow, c change) (outbox.Position, error) {
	from := core.State(n.State)
	if err := core.CheckTransition(core.NodeLivenessTable(), from, c.to); err != nil {
		return outbox.Position{}, err
	}
	reasons := slices.Clone(n.NoScheduleReasons)
	if c.dropReason != "" {
		reasons = slices.DeleteFunc(reasons, func(r string) bool { return r == c.dropReason })
	}
	if c.addReason != "" && !slices.Contains(reasons, c.addReason) {
		reasons = append(reasons, c.addReason)
	}
	if reasons == nil {
		reasons = []string{}
	}
	var conds []Condition
	if len(n.Conditions) > 0 {
		if err := json.Unmarshal(n.Conditions, &conds); err != nil {
			return outbox.Position{}, fmt.Errorf("decode conditions of node %s: %w", n.ID, err)
		}
	}
	if c.clear != "" {
		conds = slices.DeleteFunc(conds, func(x Condition) bool { return x.Type == c.clear })
	}
	if c.raise != nil {
		conds = slices.DeleteFunc(conds, func(x Condition) bool { return x.Type == c.raise.Type })
		conds = append(conds, *c.raise)
	}
	if conds == nil {
		conds = []Condition{}
	}
	condJSON, err := json.Marshal(conds)
	if err != nil {
		return outbox.Position{}, fmt.Errorf("encode conditions: %w", err)
	}
	rows, err := q.NodeLivenessUpdate(ctx, db.NodeLivenessUpdateParams{ID: n.ID, Version: n.Version,
		State: string(c.to), NoScheduleReasons: reasons, Conditions: condJSON})
	if err != nil {
		return outbox.Position{}, db.Translate(err, "node "+n.ID)
	}
	if rows == 0 {
		return outbox.Position{}, core.Errorf(core.CodeConflict, "node %s was changed concurrently", n.ID)
	}
	data := map[string]any{"id": n.ID, "poolId": n.PoolID, "state": c.to, "previousState": from,
		"noScheduleReasons": reasons, "conditions": conds, "version": n.Version + 1}
	for k, v := range c.data {
		data[k] = v
	}
	ev, err := core.NewEvent(c.event, "", core.NodeSubject(n.ID), data)
	if err != nil {
		return outbox.Position{}, fmt.Errorf("build %s event: %w", c.event, err)
	}
	return outbox.Append(ctx, q, ev)
}
