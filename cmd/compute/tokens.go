package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/config"
)

// bootstrapActor is who the command line acts as when it writes to the
// database directly: whoever can run the binary against the database
// already holds the keys to it.
var bootstrapActor = core.Actor{Tenant: "ops", Identity: "compute-cli", Role: core.RoleOperator}

// createTokenInDatabase issues a token by writing to the database itself
// (`compute tokens create --database`): for a server whose API cannot be
// reached, or before any operator token exists. It uses the server's
// configuration (DATABASE_URL, or the private cluster in COMPUTE_PG_DIR),
// so it reaches the same database as `compute serve` would; the private
// cluster can be used by one process at a time, so while `compute serve`
// runs on it the answer is to create the token over the API.
func createTokenInDatabase(ctx context.Context, cfg config.Config, logger *slog.Logger, req commands.NewToken) (commands.TokenCreated, error) {
	pool, _, closeDB, err := openDatabase(ctx, cfg, logger, "compute-tokens")
	if err != nil {
		if errors.Is(err, errPrivateClusterBusy) {
			return commands.TokenCreated{}, fmt.Errorf("the private PostgreSQL in %s is in use, most likely by a running `compute serve`: "+
				"create the token over its API instead, without --database (with COMPUTE_SERVER and COMPUTE_TOKEN set to the server and "+
				"an operator token, such as the one `compute serve` printed on its first start, or after `compute login`); "+
				"with no operator token left, stop `compute serve` and run this again", cfg.PGDir)
		}
		return commands.TokenCreated{}, err
	}
	defer closeDB()
	return (&commands.Tokens{Pool: pool}).Issue(ctx, bootstrapActor, req)
}

// createTokenDirect is `compute tokens create --database` for package cli
// (cli.Program.CreateTokenInDatabase): createTokenInDatabase with the
// server's configuration, quiet unless COMPUTE_LOG_LEVEL is debug, its
// answer in the API's shape so that it prints as the API's would.
func createTokenDirect(ctx context.Context, req client.CreateTokenRequest) (client.TokenCreated, error) {
	cfg, err := config.Load()
	if err != nil {
		return client.TokenCreated{}, err
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	if cfg.LogLevel == "debug" {
		logger = newLogger(cfg.LogLevel)
	}
	created, err := createTokenInDatabase(ctx, cfg, logger, commands.NewToken{
		Tenant: req.Tenant, Identity: req.Identity, Role: core.Role(req.Role), ExpiresAt: req.ExpiresAt})
	if err != nil {
		return client.TokenCreated{}, err
	}
	return client.TokenCreated{ID: created.ID, Tenant: created.Tenant, Identity: created.Identity, Role: client.Role(created.Role),
		CreatedAt: created.CreatedAt, ExpiresAt: created.ExpiresAt, Token: created.Secret}, nil
}
