package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/config"
)

// bootstrapActor is who the command line acts as: whoever can run the
// binary against the database already holds the keys to it.
var bootstrapActor = core.Actor{Tenant: "ops", Identity: "compute-cli", Role: core.RoleOperator}

func tokensCmd(ctx context.Context, cfg config.Config, logger *slog.Logger, args []string) error {
	if len(args) == 0 || args[0] != "create" {
		return fmt.Errorf("usage: compute tokens create --tenant T --identity I --role operator|member|viewer")
	}
	fs := flag.NewFlagSet("tokens create", flag.ContinueOnError)
	tenant := fs.String("tenant", "", "tenant id (created if missing)")
	identity := fs.String("identity", "", "who the token is for")
	role := fs.String("role", "member", "operator, member or viewer")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	pool, _, closeDB, err := openDatabase(ctx, cfg, logger, "compute-tokens")
	if err != nil {
		return err
	}
	defer closeDB()
	created, err := (&commands.Tokens{Pool: pool}).CreateToken(ctx, bootstrapActor, *tenant, *identity, core.Role(*role))
	if err != nil {
		return err
	}
	fmt.Printf("id:     %s\ntenant: %s\nrole:   %s\ntoken:  %s\n", created.ID, created.Tenant, created.Role, created.Secret)
	return nil
}
