package commands

import (
	"context"

	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg"
)

// NodeExists reports whether node id is registered (in any state, retired
// included). The join route asks it to decide whether to register the node
// first: a read of the nodes write table, so it lives with the commands
// that write it. Any failure other than "no such node" is returned
// translated.
func (h *Handlers) NodeExists(ctx context.Context, id string) (bool, error) {
	_, err := db.New(h.Pool).NodeGet(ctx, id)
	if err == nil {
		return true, nil
	}
	err = pg.Translate(err, "node "+id)
	if core.CodeOf(err) == core.CodeNotFound {
		return false, nil
	}
	return false, err
}
