package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/core"
)

var poolHeader = []string{"ID", "SITE", "KIND", "CPU-RATIO", "MEMORY-RATIO", "DISK-RATIO", "NETWORK", "VERSION", "CREATED"}

// poolRow shows the pool's version, as siteRow and nodes' rows do theirs:
// the one a conditional change (If-Match) of it takes.
func poolRow(p client.Pool) []string {
	f := func(v float32) string { return strconv.FormatFloat(float64(v), 'g', -1, 32) }
	return []string{p.ID, p.SiteID, string(p.Kind), f(p.CPURatio), f(p.MemoryRatio), f(p.DiskRatio),
		string(p.WorkloadNetwork), itoa(p.Version), ts(p.CreatedAt)}
}

func (c *cli) poolsCmd() *cobra.Command {
	var p pageFlags
	var site string
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List pools",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params := client.ListPoolsParams{}
			if site != "" {
				params.Site = &site
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				return list(ctx, c, p, func(ctx context.Context, limit *int, cursor *string) ([]byte, error) {
					params.Limit, params.Cursor = limit, cursor
					return bodyOf(api.ListPoolsWithResponse(ctx, &params))
				}, poolRow, poolHeader...)
			})
		},
	}
	addPageFlags(listCmd, &p)
	listCmd.Flags().StringVar(&site, "site", "", "only the pools of this site")

	getCmd := &cobra.Command{
		Use:   "get POOL_ID",
		Short: "Show a pool",
		Args:  ArgsNamed("POOL_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.GetPoolWithResponse(ctx, args[0]))
				if err != nil {
					return err
				}
				return showOne(c, body, func(p client.Pool) table { return table{header: poolHeader, rows: [][]string{poolRow(p)}} })
			})
		},
	}

	capacityCmd := &cobra.Command{
		Use:   "capacity POOL_ID",
		Short: "Show a pool's capacity: GPUs by model and what is allocated",
		Args:  ArgsNamed("POOL_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.GetPoolCapacityWithResponse(ctx, args[0], nil))
				if err != nil {
					return err
				}
				return showOne(c, body, func(pc client.PoolCapacity) table {
					t := table{header: []string{"KIND", "MODEL", "PROFILE", "TOTAL", "SCHEDULABLE", "ALLOCATED"}}
					for _, g := range pc.Gpus {
						t.add(g.Kind, g.Model, str(g.Profile), itoa(g.Total), itoa(g.Schedulable), itoa(g.Allocated))
					}
					t.add("vcpu", "-", "-", itoa(pc.Vcpu.Capacity), "-", itoa(pc.Vcpu.Allocated))
					t.add("memory-mb", "-", "-", itoa(pc.MemoryMb.Capacity), "-", itoa(pc.MemoryMb.Allocated))
					t.add("disk-gb", "-", "-", itoa(pc.DiskGb.Capacity), "-", itoa(pc.DiskGb.Allocated))
					return t
				})
			})
		},
	}

	var req client.CreatePoolRequest
	var kind, network string
	var cpuRatio, memRatio, diskRatio float32
	createCmd := &cobra.Command{
		Use:   "create POOL_ID --site SITE_ID --kind KIND",
		Short: "Create a pool in a site (operators)",
		Args:  ArgsNamed("POOL_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req.ID = args[0]
			req.Kind = client.CreatePoolRequestKind(kind)
			if !req.Kind.Valid() {
				return usagef("--kind: %q is not one of bare-metal, vps-host, provider", kind)
			}
			if cmd.Flags().Changed("workload-network") {
				n := client.CreatePoolRequestWorkloadNetwork(network)
				if !n.Valid() {
					return usagef("--workload-network: %q is not one of none, bridge, host", network)
				}
				req.WorkloadNetwork = &n
			}
			for name, v := range map[string]*float32{"cpu-ratio": &cpuRatio, "memory-ratio": &memRatio, "disk-ratio": &diskRatio} {
				if cmd.Flags().Changed(name) {
					if !(*v >= 1 && *v <= core.MaxPoolRatio) { // NaN and Inf too, which JSON cannot carry
						return usagef("--%s: %v: must be 1 to %d (leave it out: no overcommit)", name, *v, core.MaxPoolRatio)
					}
					switch name {
					case "cpu-ratio":
						req.CPURatio = v
					case "memory-ratio":
						req.MemoryRatio = v
					case "disk-ratio":
						req.DiskRatio = v
					}
				}
			}
			key := newIdempotencyKey()
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.CreatePoolWithResponse(ctx, &client.CreatePoolParams{IdempotencyKey: &key}, req))
				if err != nil {
					return err
				}
				return showOne(c, body, poolResultTable)
			})
		},
	}
	createCmd.Flags().StringVar(&req.SiteID, "site", "", "the site it belongs to")
	createCmd.Flags().StringVar(&kind, "kind", "bare-metal", "bare-metal, vps-host or provider")
	createCmd.Flags().Float32Var(&cpuRatio, "cpu-ratio", 1, "vCPU overcommit ratio")
	createCmd.Flags().Float32Var(&memRatio, "memory-ratio", 1, "memory overcommit ratio")
	createCmd.Flags().Float32Var(&diskRatio, "disk-ratio", 1, "disk overcommit ratio")
	createCmd.Flags().StringVar(&network, "workload-network", "none",
		"its workloads' network: none (loopback only), bridge (NAT egress) or host (the node's network; single-tenant pools only)")
	_ = createCmd.MarkFlagRequired("site")
	_ = createCmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions([]string{"bare-metal", "vps-host", "provider"}, cobra.ShellCompDirectiveNoFileComp))
	_ = createCmd.RegisterFlagCompletionFunc("workload-network", cobra.FixedCompletions([]string{"none", "bridge", "host"}, cobra.ShellCompDirectiveNoFileComp))

	cmd := Group("pools", "List, show and create pools; a pool's capacity", listCmd, getCmd, capacityCmd, createCmd)
	cmd.Aliases = []string{"pool"}
	return cmd
}

// poolResultTable is a pool create's answer: the write's result, which has
// a version where the pool as read has its creation time.
func poolResultTable(p client.PoolResult) table {
	f := func(v float32) string { return strconv.FormatFloat(float64(v), 'g', -1, 32) }
	return table{header: []string{"ID", "SITE", "KIND", "CPU-RATIO", "MEMORY-RATIO", "DISK-RATIO", "NETWORK", "VERSION"},
		rows: [][]string{{p.ID, p.SiteID, string(p.Kind), f(p.CPURatio), f(p.MemoryRatio), f(p.DiskRatio),
			string(p.WorkloadNetwork), itoa(p.Version)}}}
}

var siteHeader = []string{"ID", "NAME", "VERSION", "CREATED"}

// siteResultTable is a site create's or update's answer (see poolResultTable).
func siteResultTable(s client.SiteResult) table {
	return table{header: []string{"ID", "NAME", "VERSION"}, rows: [][]string{{s.ID, s.Name, itoa(s.Version)}}}
}

// siteRow shows the version that `sites update --if-match` takes.
func siteRow(s client.Site) []string { return []string{s.ID, s.Name, itoa(s.Version), ts(s.CreatedAt)} }

func (c *cli) sitesCmd() *cobra.Command {
	var p pageFlags
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List sites",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				return list(ctx, c, p, func(ctx context.Context, limit *int, cursor *string) ([]byte, error) {
					return bodyOf(api.ListSitesWithResponse(ctx, &client.ListSitesParams{Limit: limit, Cursor: cursor}))
				}, siteRow, siteHeader...)
			})
		},
	}
	addPageFlags(listCmd, &p)
	getCmd := &cobra.Command{
		Use:   "get SITE_ID",
		Short: "Show a site",
		Args:  ArgsNamed("SITE_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.GetSiteWithResponse(ctx, args[0]))
				if err != nil {
					return err
				}
				return showOne(c, body, func(s client.Site) table { return table{header: siteHeader, rows: [][]string{siteRow(s)}} })
			})
		},
	}
	var name string
	createCmd := &cobra.Command{
		Use:   "create SITE_ID --name NAME",
		Short: "Create a site (operators)",
		Args:  ArgsNamed("SITE_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := newIdempotencyKey()
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.CreateSiteWithResponse(ctx, &client.CreateSiteParams{IdempotencyKey: &key},
					client.CreateSiteRequest{ID: args[0], Name: name}))
				if err != nil {
					return err
				}
				return showOne(c, body, siteResultTable)
			})
		},
	}
	createCmd.Flags().StringVar(&name, "name", "", "the site's display name")
	_ = createCmd.MarkFlagRequired("name")

	var newName, key string
	var im ifMatch
	updateCmd := &cobra.Command{
		Use:   "update SITE_ID --name NAME",
		Short: "Rename a site (operators)",
		Args:  ArgsNamed("SITE_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if key == "" {
				key = newIdempotencyKey()
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.UpdateSiteWithResponse(ctx, args[0],
					&client.UpdateSiteParams{IdempotencyKey: &key, IfMatch: im.ptr()}, client.UpdateSiteRequest{Name: newName}))
				if err != nil {
					return err
				}
				return showOne(c, body, siteResultTable)
			})
		},
	}
	updateCmd.Flags().StringVar(&newName, "name", "", "the site's new display name")
	updateCmd.Flags().StringVar(&key, "idempotency-key", "", "the Idempotency-Key to send (default: a fresh one)")
	im.add(updateCmd)
	_ = updateCmd.MarkFlagRequired("name")
	cmd := Group("sites", "List, show, create and rename sites", listCmd, getCmd, createCmd, updateCmd)
	cmd.Aliases = []string{"site"}
	return cmd
}

// quotaHeader ends with VERSION, the one `quotas set --if-match` takes.
var quotaHeader = []string{"TENANT", "RESOURCE", "MAX", "USED", "VERSION"}

// reportPartialQuotas says, before the error of the refused RESOURCE=MAX
// (the last of through), which of those before it were set and which after
// it were never sent: `quotas set` sends one request per resource.
func (c *cli) reportPartialQuotas(through, unsent []string) {
	if set := through[:len(through)-1]; len(set) > 0 {
		fmt.Fprintf(c.stderr, "compute: set before %s was refused: %s\n", through[len(through)-1], strings.Join(set, " "))
	}
	if len(unsent) > 0 {
		fmt.Fprintf(c.stderr, "compute: not sent: %s\n", strings.Join(unsent, " "))
	}
}

func quotaRow(q client.Quota) []string {
	return []string{q.Tenant, q.Resource, itoa(q.Max), itoa(q.Used), itoa(q.Version)}
}

func (c *cli) quotasCmd() *cobra.Command {
	var p pageFlags
	getCmd := &cobra.Command{
		Use:   "get TENANT",
		Short: "Show a tenant's quotas: the limit and what is used, by resource",
		Args:  ArgsNamed("TENANT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				return list(ctx, c, p, func(ctx context.Context, limit *int, cursor *string) ([]byte, error) {
					return bodyOf(api.ListTenantQuotasWithResponse(ctx, args[0], &client.ListTenantQuotasParams{Limit: limit, Cursor: cursor}))
				}, quotaRow, quotaHeader...)
			})
		},
	}
	addPageFlags(getCmd, &p)
	var im ifMatch
	setCmd := &cobra.Command{
		Use:   "set TENANT RESOURCE=MAX [RESOURCE=MAX…]",
		Short: "Set a tenant's quota limits (operators): gpu, vcpu, memory (MB), disk (GB), …",
		Long: `Set a tenant's quota limits. MAX is absolute: without --if-match the last
writer wins. With --if-match VERSION (the VERSION column of quotas get) the
one RESOURCE=MAX is set only if the quota is still at that version;
otherwise the server refuses it (CONFLICT) and nothing changes. A model
quota names the model exactly as the GPUs report it, spaces included:
quote the argument.`,
		Example: `  compute quotas set acme gpu=16 vcpu=256
  compute quotas set acme gpu=24 --if-match 3
  compute quotas set acme "gpu:NVIDIA H100 80GB HBM3=8"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return ArgsNamed("TENANT", "RESOURCE=MAX")(cmd, args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			type set struct {
				resource string
				max      int64
			}
			// Each RESOURCE=MAX is a request of its own, sent in order: a
			// resource the server would refuse as a name, or one named twice,
			// is refused here, before any is sent, so that a typo in the
			// last one does not leave the first ones set and the rest not.
			var sets []set
			named := map[string]bool{}
			if im.version != "" && len(args) > 2 {
				// One version cannot belong to several quotas.
				return usagef("--if-match: give one RESOURCE=MAX with it, not %d", len(args)-1)
			}
			for _, a := range args[1:] {
				// The last '=': a GPU model's name may hold one, MAX never.
				i := strings.LastIndex(a, "=")
				ok := i >= 0
				res, v := a, ""
				if ok {
					res, v = a[:i], a[i+1:]
				}
				if !ok || res == "" {
					return usagef("RESOURCE=MAX: %q: want RESOURCE=MAX, such as gpu=16", a)
				}
				if err := core.ValidQuotaResource(res); err != nil {
					var ce *core.Error
					errors.As(err, &ce)
					return usagef("RESOURCE=MAX: %q: %s", a, ce.Message)
				}
				if named[res] {
					return usagef("RESOURCE=MAX: %s is named twice", res)
				}
				named[res] = true
				max, err := strconv.ParseInt(v, 10, 64)
				if err != nil || max < 0 {
					return usagef("RESOURCE=MAX: %q: MAX must be a whole number, 0 or more", a)
				}
				sets = append(sets, set{res, max})
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				items := make([]client.QuotaResult, 0, len(sets))
				for i, s := range sets {
					res, err := api.SetQuotaWithResponse(ctx, args[0], s.resource,
						&client.SetQuotaParams{IfMatch: im.ptr()}, client.SetQuotaRequest{Max: s.max})
					if err != nil {
						// The server refused this one (a max below the usage)
						// after the ones before it were set: say which are.
						c.reportPartialQuotas(args[1:i+2], args[i+2:])
						return fmt.Errorf("%s: %w", s.resource, err)
					}
					items = append(items, *res.JSON200)
				}
				body, err := jsonItems(items)
				if err != nil {
					return err
				}
				return c.show(body, func() (table, error) {
					t := table{header: quotaHeader}
					for _, q := range items {
						t.add(q.Tenant, q.Resource, itoa(q.Max), itoa(q.Used), itoa(q.Version))
					}
					return t, nil
				})
			})
		},
	}
	im.add(setCmd)
	cmd := Group("quotas", "Show and set a tenant's quotas", getCmd, setCmd)
	cmd.Aliases = []string{"quota"}
	return cmd
}
