package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/projections"
)

// projectionsCmd runs `compute projections rebuild NAME`: replay the whole
// log into fresh tables and swap them in, for a read model whose code
// changed or whose table is suspect.
func projectionsCmd(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string) error {
	if len(args) != 2 || args[0] != "rebuild" {
		return fmt.Errorf("usage: compute projections rebuild NAME")
	}
	pool, _, closeDB, err := openDatabase(ctx, cfg, logger, "compute-projections")
	if err != nil {
		return err
	}
	defer closeDB()
	res, err := projections.Rebuild(ctx, pool, args[1])
	if err != nil {
		return err
	}
	fmt.Printf("rebuilt %s from %d events, up to position %s\n", args[1], res.Events, res.Position)
	return nil
}
