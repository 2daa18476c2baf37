package cli

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

var fairShareHeader = []string{"TENANT", "SHARE", "VERSION", "USAGE (GPU-H)", "HALF-LIFE"}

// fairShareCmd is `compute fair-share get|set TENANT`, shaped like
// `compute quotas get|set TENANT`: a tenant's share of the waiting line
// (docs/concepts/fair-share.md).
func (c *cli) fairShareCmd() *cobra.Command {
	getCmd := &cobra.Command{
		Use:   "get TENANT",
		Short: "Show a tenant's fair share and its decayed GPU usage",
		Args:  ArgsNamed("TENANT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.GetTenantFairShareWithResponse(ctx, args[0]))
				if err != nil {
					return err
				}
				return showOne(c, body, func(f client.TenantFairShare) table {
					return table{header: fairShareHeader, rows: [][]string{{f.Tenant, itoa(int64(f.Share)), itoa(f.Version),
						strconv.FormatFloat(f.UsageGpuHours, 'f', 3, 64), strconv.FormatFloat(f.HalfLifeHours, 'f', -1, 64) + "h"}}}
				})
			})
		},
	}
	setCmd := &cobra.Command{
		Use:   "set TENANT SHARE",
		Short: "Set a tenant's fair share of the waiting line, 1 to 1000000 (operators)",
		Long: `set gives a tenant its share of the waiting line of every pool and site:
pending reservations are tried in order of their tenant's decayed GPU usage
divided by its share, so a tenant with share 2 may use twice what one with
share 1 uses and still be served as early. A tenant never given a share has 1.`,
		Example: `  compute fair-share set acme 4`,
		Args:    ArgsNamed("TENANT", "SHARE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			share, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || share < 1 || share > 1_000_000 {
				return usagef("SHARE: %q must be a whole number from 1 to 1000000", args[1])
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.SetTenantFairShareWithResponse(ctx, args[0], client.SetTenantFairShareRequest{Share: share}))
				if err != nil {
					return err
				}
				return showOne(c, body, func(r client.TenantFairShareResult) table {
					return table{header: []string{"TENANT", "SHARE", "VERSION"},
						rows: [][]string{{r.Tenant, itoa(int64(r.Share)), itoa(r.Version)}}}
				})
			})
		},
	}
	return Group("fair-share", "Show and set a tenant's fair share of the waiting line", getCmd, setCmd)
}
