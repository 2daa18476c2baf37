package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/bettercompute/compute/internal/config"
	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/invariants"
)

// checkCmd runs the capacity invariants against a live database: the same
// queries the torture test uses, for operators who want proof, not trust.
func checkCmd(ctx context.Context, cfg config.Config, logger *slog.Logger) error {
	pool, _, closeDB, err := openDatabase(ctx, cfg, logger, "compute-check")
	if err != nil {
		return err
	}
	defer closeDB()
	violations, err := invariants.Check(ctx, db.New(pool))
	if err != nil {
		return err
	}
	for _, v := range violations {
		fmt.Printf("VIOLATION %s: %s\n", v.Invariant, v.Detail)
	}
	if len(violations) > 0 {
		return fmt.Errorf("%d invariant violations", len(violations))
	}
	fmt.Println("0 invariant violations")
	return nil
}
