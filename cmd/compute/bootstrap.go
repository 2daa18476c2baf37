package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// bootstrapIdentity is the identity of the first operator token.
const bootstrapIdentity = "bootstrap"

// printBootstrapToken gives a fresh installation its first operator token:
// when the database holds no API token at all (the first start of `compute
// serve`, unless --demo issued its own), it issues one for tenant ops and
// prints it to out, once, with the lines that use it from another
// terminal. Later starts find a token and print nothing; an installation
// that lost every operator token recovers with `compute tokens create
// --database` while the server is stopped. It has no issuing token, so it
// is the root of the tokens issued with it (revoking it revokes them, unless
// revoked with --keep-descendants, which is how it is retired), and
// COMPUTE_MAX_TOKEN_TTL does not apply to it: no token exists yet that
// could issue a shorter-lived one.
//
// Two processes starting on the same empty database at once may both
// issue one; both tokens are valid and either may be revoked.
func printBootstrapToken(ctx context.Context, pool *pgxpool.Pool, apiAddr string, out io.Writer, logger *slog.Logger) error {
	tokens := &commands.Tokens{Pool: pool}
	exists, err := tokens.AnyExists(ctx)
	if err != nil {
		return fmt.Errorf("bootstrap token: %w", err)
	}
	if exists {
		return nil
	}
	created, err := tokens.CreateToken(ctx, bootstrapActor, bootstrapActor.Tenant, bootstrapIdentity, core.RoleOperator)
	if err != nil {
		return fmt.Errorf("bootstrap token: %w", err)
	}
	fmt.Fprintf(out, `
No API token existed, so this first start issued an operator token (tenant %s, identity %s, id %s).
It is shown only now; keep it safe. The tokens issued with it descend from it: revoking it (compute tokens revoke %s) revokes them all,
and once other operator tokens exist, compute tokens revoke --keep-descendants %s retires it alone:
  %s

From another terminal:
  export COMPUTE_SERVER=%s COMPUTE_TOKEN=%s
  %s tokens create --tenant acme --identity alice --role member

`, created.Tenant, created.Identity, created.ID, created.ID, created.ID, created.Secret, localURL("http", apiAddr), created.Secret, invokedAs())
	logger.Info("bootstrap operator token issued", "token_id", created.ID)
	return nil
}

// invokedAs is how this binary was started (./bin/compute from `make run`,
// /usr/local/bin/compute from a release install), so that the commands
// it suggests run as pasted.
func invokedAs() string {
	if len(os.Args) > 0 && os.Args[0] != "" {
		return os.Args[0]
	}
	return "compute"
}
