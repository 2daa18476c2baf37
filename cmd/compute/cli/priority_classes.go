package cli

import (
	"context"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

var priorityClassHeader = []string{"NAME", "VALUE", "PREEMPTIBLE", "GRACE", "DEFAULT", "DESCRIPTION"}

func priorityClassRow(p client.PriorityClass) []string {
	return []string{p.Name, itoa(int64(p.Value)), strconv.FormatBool(p.Preemptible), itoa(int64(p.GraceSeconds)) + "s",
		strconv.FormatBool(p.IsDefault), str(&p.Description)} // "-" for none: an empty last cell reads as a missing column
}

var tenantClassesHeader = []string{"TENANT", "ALLOWED", "DEFAULT", "VERSION"}

func (c *cli) priorityClassesCmd() *cobra.Command {
	var p pageFlags
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List priority classes",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				return list(ctx, c, p, func(ctx context.Context, limit *int, cursor *string) ([]byte, error) {
					return bodyOf(api.ListPriorityClassesWithResponse(ctx, &client.ListPriorityClassesParams{Limit: limit, Cursor: cursor}))
				}, priorityClassRow, priorityClassHeader...)
			})
		},
	}
	addPageFlags(listCmd, &p)

	getCmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a priority class",
		Args:  ArgsNamed("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.GetPriorityClassWithResponse(ctx, args[0]))
				if err != nil {
					return err
				}
				return showOne(c, body, func(p client.PriorityClass) table {
					return table{header: priorityClassHeader, rows: [][]string{priorityClassRow(p)}}
				})
			})
		},
	}

	var (
		value, grace       int64
		preemptible, isDef bool
		description, key   string
	)
	createCmd := &cobra.Command{
		Use:   "create NAME --value N [--preemptible] [--grace-seconds S]",
		Short: "Create a priority class (operators)",
		Long: `create adds a priority class: --value orders classes (higher is more
important), --preemptible lets reservations of the class be displaced by a
strictly higher value, and --grace-seconds is what a displaced workload gets
between SIGTERM and the kill (default 30). Classes cannot be changed or
deleted yet. A tenant may use the default class and the classes
"priority-classes set-allowed" names for it.`,
		Example: `  compute priority-classes create batch --value -100 --preemptible --grace-seconds 60
  compute priority-classes create production --value 1000 --description "never preempted"`,
		Args: ArgsNamed("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := client.CreatePriorityClassRequest{Name: args[0], Value: value}
			flags := cmd.Flags()
			if flags.Changed("preemptible") {
				req.Preemptible = &preemptible
			}
			if flags.Changed("grace-seconds") {
				if grace < 0 {
					return usagef("--grace-seconds: %d is negative", grace)
				}
				req.GraceSeconds = &grace
			}
			if description != "" {
				req.Description = &description
			}
			if flags.Changed("default") {
				req.IsDefault = &isDef
			}
			if key == "" {
				key = newIdempotencyKey()
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.CreatePriorityClassWithResponse(ctx, &client.CreatePriorityClassParams{IdempotencyKey: &key}, req))
				if err != nil {
					return err
				}
				return showOne(c, body, func(r client.PriorityClassResult) table {
					return table{header: priorityClassHeader, rows: [][]string{priorityClassRow(client.PriorityClass{
						Name: r.Name, Value: r.Value, Preemptible: r.Preemptible, GraceSeconds: r.GraceSeconds,
						IsDefault: r.IsDefault, Description: r.Description})}}
				})
			})
		},
	}
	f := createCmd.Flags()
	f.Int64Var(&value, "value", 0, "the class's value: higher is more important (-1000000000 to 1000000000)")
	f.BoolVar(&preemptible, "preemptible", false, "reservations of the class may be displaced by a higher value")
	f.Int64Var(&grace, "grace-seconds", 30, "seconds between SIGTERM and the kill of a displaced workload")
	f.StringVar(&description, "description", "", "what the class is for")
	f.BoolVar(&isDef, "default", false, "make it the default class (refused while another class is the default)")
	f.StringVar(&key, "idempotency-key", "", "the Idempotency-Key to send (default: a fresh one)")
	_ = createCmd.MarkFlagRequired("value")

	showTenant := func(body []byte) error {
		return showOne(c, body, func(r client.TenantPriorityClasses) table {
			return table{header: tenantClassesHeader, rows: [][]string{{r.Tenant, joinOr(r.Allowed, "-"), r.DefaultClass, itoa(r.Version)}}}
		})
	}
	allowedCmd := &cobra.Command{
		Use:   "allowed TENANT",
		Short: "Show the priority classes a tenant may use",
		Args:  ArgsNamed("TENANT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.GetTenantPriorityClassesWithResponse(ctx, args[0]))
				if err != nil {
					return err
				}
				return showTenant(body)
			})
		},
	}

	var none bool
	setCmd := &cobra.Command{
		Use:   "set-allowed TENANT (CLASS… | --none)",
		Short: "Replace the priority classes a tenant may use besides the default (operators)",
		Long: `set-allowed replaces the whole allow-list of a tenant: afterwards it may use
the classes named and the default class. --none leaves it the default class
only. Reservations already made keep their class.`,
		Example: `  compute priority-classes set-allowed acme batch production
  compute priority-classes set-allowed acme --none`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return ArgsNamed("TENANT")(cmd, args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			classes := append([]string{}, args[1:]...)
			if none == (len(classes) > 0) {
				return usagef("CLASS…, --none: give the classes, or --none for the default class only")
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.SetTenantPriorityClassesWithResponse(ctx, args[0],
					client.SetTenantPriorityClassesRequest{Classes: classes}))
				if err != nil {
					return err
				}
				return showTenant(body)
			})
		},
	}
	setCmd.Flags().BoolVar(&none, "none", false, "allow the default class only")

	cmd := Group("priority-classes", "List, show and create priority classes; show and set the ones a tenant may use",
		listCmd, getCmd, createCmd, allowedCmd, setCmd)
	cmd.Aliases = []string{"priority-class", "pc"}
	return cmd
}
