package cli

import (
	"cmp"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

// nodeAction is a POST on a node or a device with an If-Match and no body.
type nodeAction struct {
	verb, arg, short string
	do               func(ctx context.Context, api *client.API, id string, im *string) ([]byte, error)
	device           bool // answered with the device, not the node
}

func (c *cli) nodesCmd() *cobra.Command {
	actions := []nodeAction{
		{"cordon", "NODE_ID", "Keep new bookings off a node (existing reservations stay)",
			func(ctx context.Context, api *client.API, id string, im *string) ([]byte, error) {
				return bodyOf(api.CordonNodeWithResponse(ctx, id, &client.CordonNodeParams{IfMatch: im}))
			}, false},
		{"uncordon", "NODE_ID", "Let new bookings onto a node again",
			func(ctx context.Context, api *client.API, id string, im *string) ([]byte, error) {
				return bodyOf(api.UncordonNodeWithResponse(ctx, id, &client.UncordonNodeParams{IfMatch: im}))
			}, false},
		{"drain", "NODE_ID", "Drain a node: no new bookings, existing reservations run to their end",
			func(ctx context.Context, api *client.API, id string, im *string) ([]byte, error) {
				return bodyOf(api.DrainNodeWithResponse(ctx, id, &client.DrainNodeParams{IfMatch: im}))
			}, false},
		{"undrain", "NODE_ID", "End a drain",
			func(ctx context.Context, api *client.API, id string, im *string) ([]byte, error) {
				return bodyOf(api.UndrainNodeWithResponse(ctx, id, &client.UndrainNodeParams{IfMatch: im}))
			}, false},
		{"quarantine", "GPU_ID", "Take a GPU (and its MIG instances or slots) out of placement",
			func(ctx context.Context, api *client.API, id string, im *string) ([]byte, error) {
				return bodyOf(api.QuarantineDeviceWithResponse(ctx, id, &client.QuarantineDeviceParams{IfMatch: im}))
			}, true},
		{"unquarantine", "GPU_ID", "Put a quarantined GPU back into placement",
			func(ctx context.Context, api *client.API, id string, im *string) ([]byte, error) {
				return bodyOf(api.UnquarantineDeviceWithResponse(ctx, id, &client.UnquarantineDeviceParams{IfMatch: im}))
			}, true},
	}
	subs := []*cobra.Command{c.nodesListCmd(), c.nodesGetCmd(), c.nodesTaintCmd("taint"), c.nodesTaintCmd("untaint"),
		c.nodesSetModeCmd()}
	for _, a := range actions {
		subs = append(subs, c.nodeActionCmd(a))
	}
	cmd := Group("nodes", "Operate nodes: list, cordon, drain, taint, quarantine GPUs, set their sharing mode (operators)", subs...)
	cmd.Aliases = []string{"node"}
	return cmd
}

// nodeHeader ends with VERSION, the one cordon, drain, taint and their
// undoing --if-match take.
var nodeHeader = []string{"ID", "POOL", "LIVENESS", "CORDONED", "NO-SCHEDULE", "TAINTS", "ALLOCATIONS", "HEARTBEAT", "VERSION"}

func nodeRow(n client.ReadNode) []string {
	return []string{n.ID, n.PoolID, string(n.Liveness), yesNo(n.Cordoned), joinOr(n.NoScheduleReasons, "-"),
		joinOr(n.Taints, "-"), itoa(n.Allocations), tsp(n.LastHeartbeatAt), itoa(n.Version)}
}

func (c *cli) nodesListCmd() *cobra.Command {
	var p pageFlags
	var pool string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List nodes with their liveness and what is scheduled on them",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params := client.ListNodesParams{}
			if pool != "" {
				params.Pool = &pool
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				return list(ctx, c, p, func(ctx context.Context, limit *int, cursor *string) ([]byte, error) {
					params.Limit, params.Cursor = limit, cursor
					return bodyOf(api.ListNodesWithResponse(ctx, &params))
				}, nodeRow, nodeHeader...)
			})
		},
	}
	addPageFlags(cmd, &p)
	cmd.Flags().StringVar(&pool, "pool", "", "only the nodes of this pool")
	return cmd
}

func (c *cli) nodesGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get NODE_ID",
		Short: "Show a node and its GPUs with their versions (with every device and its bookings: -o yaml)",
		Args:  ArgsNamed("NODE_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.GetNodeWithResponse(ctx, args[0], nil))
				if err != nil {
					return err
				}
				var gpus table
				err = showOne(c, body, func(n client.ReadNode) table {
					gpus = gpuTable(ptrOr(n.Devices))
					return table{header: nodeHeader, rows: [][]string{nodeRow(n)}}
				})
				if err != nil || len(gpus.rows) == 0 {
					return err
				}
				fmt.Fprintln(c.stdout)
				return c.show(body, func() (table, error) { return gpus, nil })
			})
		},
	}
}

// gpuTable is the GPUs of a node as `nodes get` shows them under the node,
// each with its VERSION, the one quarantine, unquarantine and set-mode
// --if-match take, and how many bookings it and its atoms (MIG instances,
// slots) have now or later (set-mode is refused while there are any).
func gpuTable(devices []client.ReadDevice) table {
	bookings := map[string]int{}
	for _, d := range devices {
		bookings[cmp.Or(ptrOr(d.ParentID), d.ID)] += len(d.Bookings)
	}
	t := table{header: []string{"GPU", "MODEL", "MODE", "HEALTH", "QUARANTINED", "BOOKINGS", "VERSION"}}
	for _, d := range devices {
		if d.Kind != client.ReadDeviceKindGpu || ptrOr(d.Retired) {
			continue
		}
		t.add(d.ID, d.Model, str(d.Mode), string(d.Health), yesNo(d.Quarantined), itoa(bookings[d.ID]), itoa(d.Version))
	}
	return t
}

func (c *cli) nodeActionCmd(a nodeAction) *cobra.Command {
	var im ifMatch
	cmd := &cobra.Command{
		Use:   a.verb + " " + a.arg,
		Short: a.short,
		Args:  ArgsNamed(a.arg),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := a.do(ctx, api, args[0], im.ptr())
				if err != nil {
					return err
				}
				if a.device {
					return showOne(c, body, func(d client.DeviceResult) table {
						return table{header: []string{"ID", "MODE", "HEALTH", "QUARANTINED", "VERSION"},
							rows: [][]string{{d.ID, string(d.Mode), string(d.Health), yesNo(d.Quarantined), itoa(d.Version)}}}
					})
				}
				return showOne(c, body, func(n struct {
					ID                string   `json:"id"`
					Cordoned          *bool    `json:"cordoned"`
					NoScheduleReasons []string `json:"noScheduleReasons"`
					State             string   `json:"state"`
					Version           int64    `json:"version"`
				}) table {
					if n.Cordoned == nil {
						// drain, undrain and release answer with the node's
						// state, not its cordon.
						return table{header: []string{"ID", "STATE", "NO-SCHEDULE", "VERSION"},
							rows: [][]string{{n.ID, n.State, joinOr(n.NoScheduleReasons, "-"), itoa(n.Version)}}}
					}
					return table{header: []string{"ID", "CORDONED", "NO-SCHEDULE", "VERSION"},
						rows: [][]string{{n.ID, yesNo(*n.Cordoned), joinOr(n.NoScheduleReasons, "-"), itoa(n.Version)}}}
				})
			})
		},
	}
	im.add(cmd)
	return cmd
}

func (c *cli) nodesTaintCmd(verb string) *cobra.Command {
	var im ifMatch
	var effect string
	short := "Add a NoSchedule taint KEY[=VALUE]: only reservations tolerating it are placed there"
	if verb == "untaint" {
		short = "Remove a taint KEY[=VALUE] from a node"
	}
	cmd := &cobra.Command{
		Use:   verb + " NODE_ID KEY[=VALUE]",
		Short: short,
		Args:  ArgsNamed("NODE_ID", "KEY[=VALUE]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			taint, err := parseTaint("KEY[=VALUE]", args[1])
			if err != nil {
				return err
			}
			if effect != "" {
				e := client.TaintEffect(effect)
				if !e.Valid() {
					return usagef("--effect: %q is not a taint effect (NoSchedule)", effect)
				}
				taint.Effect = &e
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				var body []byte
				if verb == "taint" {
					body, err = bodyOf(api.TaintNodeWithResponse(ctx, args[0], &client.TaintNodeParams{IfMatch: im.ptr()}, taint))
				} else {
					body, err = bodyOf(api.UntaintNodeWithResponse(ctx, args[0], &client.UntaintNodeParams{IfMatch: im.ptr()}, taint))
				}
				if err != nil {
					return err
				}
				return showOne(c, body, func(n client.NodeResult) table {
					taints := make([]string, len(n.Taints))
					for i, t := range n.Taints {
						taints[i] = t.Key
						if t.Value != nil {
							taints[i] += "=" + *t.Value
						}
					}
					return table{header: []string{"ID", "POOL", "CORDONED", "TAINTS", "VERSION"},
						rows: [][]string{{n.ID, n.PoolID, yesNo(n.Cordoned), joinOr(taints, "-"), itoa(n.Version)}}}
				})
			})
		},
	}
	if verb == "taint" {
		cmd.Flags().StringVar(&effect, "effect", "", "the taint's effect (NoSchedule, the default)")
	}
	im.add(cmd)
	return cmd
}
