package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

var tenantSuspensionHeader = []string{"TENANT", "SUSPENDED", "REASON", "VERSION", "RELEASED"}

// tenantsCmd is `compute tenants suspend|resume TENANT`: an operator
// suspends a tenant (non-payment, abuse, an incident) and resumes it
// (docs/concepts/tenant-suspension.md).
func (c *cli) tenantsCmd() *cobra.Command {
	var reason string
	var release bool
	suspendCmd := &cobra.Command{
		Use:   "suspend TENANT --reason TEXT [--release-reservations]",
		Short: "Suspend a tenant: its tokens are refused and it can create nothing (operators)",
		Long: `suspend refuses every request with one of the tenant's tokens (403
TENANT_SUSPENDED, naming the reason), ends its open event streams, and
refuses new reservations, extensions and instances for it. Its reservations
run until their end unless --release-reservations releases them at once (each
the ordinary way, with its event). Suspending a suspended tenant changes
nothing; with --release-reservations it still releases what is left.`,
		Example: `  compute tenants suspend acme --reason "invoice 2026-11 unpaid"
  compute tenants suspend acme --reason "abuse report 4411" --release-reservations`,
		Args: ArgsNamed("TENANT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if reason == "" {
				return usagef("--reason is required: say why the tenant is suspended")
			}
			req := client.SuspendTenantRequest{Reason: reason}
			if release {
				req.ReleaseReservations = &release
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.SuspendTenantWithResponse(ctx, args[0], req))
				if err != nil {
					return err
				}
				return showOne(c, body, tenantSuspensionTable)
			})
		},
	}
	suspendCmd.Flags().StringVar(&reason, "reason", "", "why the tenant is suspended; every refusal it gets names it (required)")
	suspendCmd.Flags().BoolVar(&release, "release-reservations", false, "also release (pending: cancel) each of its reservations now")
	resumeCmd := &cobra.Command{
		Use:     "resume TENANT",
		Short:   "Resume a suspended tenant: its tokens work again (operators)",
		Example: `  compute tenants resume acme`,
		Args:    ArgsNamed("TENANT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.ResumeTenantWithResponse(ctx, args[0]))
				if err != nil {
					return err
				}
				return showOne(c, body, tenantSuspensionTable)
			})
		},
	}
	return Group("tenants", "Suspend and resume tenants", suspendCmd, resumeCmd)
}

func tenantSuspensionTable(s client.TenantSuspension) table {
	suspended, reason := "no", ""
	if s.Suspended {
		suspended = "yes"
	}
	if s.Reason != nil {
		reason = *s.Reason
	}
	return table{header: tenantSuspensionHeader, rows: [][]string{{string(s.Tenant), suspended, reason, itoa(s.Version),
		itoa(int64(len(s.ReleasedReservations)))}}}
}
