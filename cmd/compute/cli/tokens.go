package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

var tokenHeader = []string{"ID", "TENANT", "IDENTITY", "ROLE", "CREATED", "EXPIRES", "REVOKED", "ISSUED-BY"}

func tokenRow(t client.Token) []string {
	return []string{t.ID, t.Tenant, t.Identity, string(t.Role), ts(t.CreatedAt), tsp(t.ExpiresAt), tsp(t.RevokedAt), str(t.IssuedBy)}
}

// tokenRevokedTable is a revoke's answer: the token, and how many tokens
// descending from it went with it.
func tokenRevokedTable(t client.TokenRevoked) table {
	row := tokenRow(client.Token{ID: t.ID, Tenant: t.Tenant, Identity: t.Identity, Role: t.Role, CreatedAt: t.CreatedAt,
		ExpiresAt: t.ExpiresAt, RevokedAt: t.RevokedAt, IssuedBy: t.IssuedBy})
	return table{header: append(tokenHeader[:len(tokenHeader):len(tokenHeader)], "DESCENDANTS-REVOKED"),
		rows: [][]string{append(row, itoa(t.DescendantsRevoked))}}
}

func (c *cli) tokensCmd() *cobra.Command {
	var p pageFlags
	var tenant string
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List API tokens, never their secrets (operators: every tenant's, with the token that issued each)",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params := client.ListTokensParams{}
			if tenant != "" {
				params.Tenant = &tenant
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				row, header := tokenRow, tokenHeader
				if c.output == "table" {
					// The API shows a token's issuer to operators only (it
					// is an operator's token, which a tenant never learns
					// of): to anyone else ISSUED-BY would read "-", "issued
					// by no token", for every token.
					who, err := api.WhoamiWithResponse(ctx)
					if err != nil {
						return err
					}
					if who.JSON200.Role != client.RoleOperator {
						row = func(t client.Token) []string { r := tokenRow(t); return r[:len(r)-1] }
						header = tokenHeader[:len(tokenHeader)-1]
					}
				}
				return list(ctx, c, p, func(ctx context.Context, limit *int, cursor *string) ([]byte, error) {
					params.Limit, params.Cursor = limit, cursor
					return bodyOf(api.ListTokensWithResponse(ctx, &params))
				}, row, header...)
			})
		},
	}
	addPageFlags(listCmd, &p)
	listCmd.Flags().StringVar(&tenant, "tenant", "", "operators: only this tenant's tokens")

	var keepDescendants bool
	revokeCmd := &cobra.Command{
		Use:   "revoke TOKEN_ID",
		Short: "Revoke a token and every token it issued (operators; any token itself); servers drop them within their cache interval",
		Long: `revoke revokes the token and, in the same transaction, every token
descending from it: the tokens it issued, the tokens those issued, and so
on. DESCENDANTS-REVOKED says how many went with it (0 when it issued none).
Revoking a token revoked before revokes its descendants that are still valid.

Operators revoke any token. Any other token may revoke itself (the TOKEN
column of compute whoami) and no other: a token that may have leaked is
ended by whoever holds it.

--keep-descendants revokes the token alone: the tokens it issued keep
working. That is how the operator token printed at the first start is
retired once other operator tokens exist. They stay its descendants: a
later revoke of it without the flag revokes them.`,
		Args: ArgsNamed("TOKEN_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := refuseSecretAsID("TOKEN_ID", args[0]); err != nil {
				return err
			}
			var params client.RevokeTokenParams
			if keepDescendants {
				keep := client.RevokeTokenParamsDescendantsKeep
				params.Descendants = &keep
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.RevokeTokenWithResponse(ctx, args[0], &params))
				if err != nil {
					return err
				}
				return showOne(c, body, tokenRevokedTable)
			})
		},
	}
	revokeCmd.Flags().BoolVar(&keepDescendants, "keep-descendants", false, "revoke this token alone: the tokens it issued stay valid")
	cmd := Group("tokens", "Issue, list and revoke API tokens", c.tokensCreateCmd(), listCmd, revokeCmd)
	cmd.Aliases = []string{"token"}
	return cmd
}

func (c *cli) tokensCreateCmd() *cobra.Command {
	var tenant, identity, role string
	var direct bool
	var expiresIn string
	cmd := &cobra.Command{
		Use:   "create --tenant T --identity I --role operator|member|viewer [--expires-in DURATION]",
		Short: "Issue an API token and print its secret once",
		Long: `create issues a token bound to (tenant, identity, role), creating the
tenant if it does not exist, and prints the secret once: the server keeps
only its hash. --expires-in is a duration: the token stops authenticating
that long after it is issued (720h is 30 days, 90m an hour and a half; at
least 1s), at the time printed as expiresAt, the API's name for it (RFC
3339, UTC).
Without it the token is valid until revoked. A server with a maximum token
lifetime (COMPUTE_MAX_TOKEN_TTL) refuses a token without --expires-in, or
with a longer one, with TOKEN_LIFETIME_EXCEEDED (exit 2); --database is
outside that maximum.
The token the request is made with is recorded as the new token's issuer:
revoking it revokes the new token too.

It asks the running server (POST /v1/tokens) with the current context or
COMPUTE_SERVER and COMPUTE_TOKEN, which must be an operator's token: the
one compute serve printed on its first start, or the demo's. With
--database it writes to the database itself instead, with the server's
configuration (DATABASE_URL, or the private PostgreSQL in .compute/pg):
for the first token of an installation whose server is not running. The
private PostgreSQL serves one process at a time, so --database fails while
compute serve runs on it.`,
		Example: `  compute tokens create --tenant acme --identity alice --role member
  compute tokens create --tenant acme --identity ci --role member --expires-in 720h
  compute tokens create --database --tenant ops --identity admin --role operator`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r := client.Role(role)
			if r != client.RoleOperator && r != client.RoleMember && r != client.RoleViewer {
				return usagef("--role: %q is not one of operator, member, viewer", role)
			}
			req := client.CreateTokenRequest{Tenant: tenant, Identity: identity, Role: r}
			if cmd.Flags().Changed("expires-in") {
				d, err := parseExpiresIn(expiresIn)
				if err != nil {
					return err
				}
				// Whole seconds: the time the output and the server's
				// messages show is the time sent.
				at := time.Now().Add(d).UTC().Truncate(time.Second)
				req.ExpiresAt = &at
			}
			if direct {
				return c.createTokenDirect(cmd.Context(), req)
			}
			if _, err := c.resolveTarget(); err != nil {
				var nl notLoggedInError
				if errors.As(err, &nl) {
					nl.msg += " Or, with no server running on the database, pass --database to write to it directly."
					return nl
				}
				return err
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				res, err := api.CreateTokenWithResponse(ctx, req)
				if err != nil {
					return expiresAtHint(err, expiresIn, req.ExpiresAt)
				}
				return c.showToken(res.Body, *res.JSON201)
			})
		},
	}
	cmd.Flags().StringVar(&tenant, "tenant", "", "the tenant (created if missing)")
	cmd.Flags().StringVar(&identity, "identity", "", "who the token is for")
	cmd.Flags().StringVar(&role, "role", "member", "operator, member or viewer")
	cmd.Flags().BoolVar(&direct, "database", false, "write to the database directly instead of asking the server")
	cmd.Flags().StringVar(&expiresIn, "expires-in", "", "how long from now the token stays valid, a `DURATION` such as 720h (30 days); "+
		"expiresAt in the output is the time it ends (default: until revoked)")
	_ = cmd.MarkFlagRequired("tenant")
	_ = cmd.MarkFlagRequired("identity")
	_ = cmd.RegisterFlagCompletionFunc("role", cobra.FixedCompletions([]string{"operator", "member", "viewer"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// createTokenDirect is tokens create --database: the token comes from
// Program.CreateTokenInDatabase (package main, which may open the
// database) and prints as the API's answer would.
func (c *cli) createTokenDirect(ctx context.Context, req client.CreateTokenRequest) error {
	if c.createTokenInDatabase == nil {
		return usagef("--database: this program cannot write to the database; create the token over the API")
	}
	t, err := c.createTokenInDatabase(ctx, req)
	if err != nil {
		return err
	}
	body, err := json.Marshal(t)
	if err != nil {
		return err
	}
	return c.showToken(body, t)
}

// showToken prints a created token, one "label: value" line each, the
// values aligned in one column. Scripts read the lines by their label
// (`token:`) and the value after it, split at the first run of spaces
// (awk '$1 == "token:" {print $2}'), as they did before the padding
// lined the values up; -o json is the form for anything more. The
// identity names the token as `tokens list` does (tenant, identity,
// role), since two tokens of one tenant and role differ by their identity
// only.
func (c *cli) showToken(body []byte, t client.TokenCreated) error {
	if c.output != "table" {
		return c.show(body, nil)
	}
	lines := [][2]string{{"id", t.ID}, {"tenant", t.Tenant}, {"identity", t.Identity}, {"role", string(t.Role)}, {"token", t.Token}}
	if t.ExpiresAt != nil {
		// The instant, under the API's name: --expires-in was the
		// duration that led to it.
		lines = append(lines, [2]string{"expiresAt", ts(*t.ExpiresAt)})
	}
	width := 0
	for _, l := range lines {
		width = max(width, len(l[0])+len(":"))
	}
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%-*s %s\n", width, l[0]+":", terminalSafe(l[1]))
	}
	_, err := io.WriteString(c.stdout, b.String())
	return err
}
