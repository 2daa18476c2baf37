package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

var instanceHeader = []string{"ID", "STATE", "RESERVATION", "NODE", "IMAGE", "COMMAND", "REASON"}

func instanceRow(i client.Instance) []string {
	return []string{i.ID, string(i.State), i.ReservationID, i.NodeID, str(i.Spec.Image), str(i.Spec.Command), str(i.Reason)}
}

func (c *cli) instancesCmd() *cobra.Command {
	var reservation, image, command, key string
	createCmd := &cobra.Command{
		Use:   "create --reservation RESERVATION_ID [--image IMAGE] [--command CMD]",
		Short: "Start a workload on a booked or active reservation's devices",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			req := client.CreateInstanceRequest{ReservationID: reservation}
			if image != "" {
				req.Image = &image
			}
			if command != "" {
				req.Command = &command
			}
			if key == "" {
				key = newIdempotencyKey()
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.CreateInstanceWithResponse(ctx, &client.CreateInstanceParams{IdempotencyKey: &key}, req))
				if err != nil {
					return err
				}
				return showOne(c, body, func(i client.Instance) table {
					return table{header: instanceHeader, rows: [][]string{instanceRow(i)}}
				})
			})
		},
	}
	createCmd.Flags().StringVar(&reservation, "reservation", "", "the reservation whose devices it runs on")
	createCmd.Flags().StringVar(&image, "image", "", "the workload's OCI image: recorded, not pulled yet (the command runs on the node's own system directories)")
	createCmd.Flags().StringVar(&command, "command", "", "the workload's command")
	createCmd.Flags().StringVar(&key, "idempotency-key", "", "the Idempotency-Key to send (default: a fresh one)")
	_ = createCmd.MarkFlagRequired("reservation")

	one := func(verb, short string, do func(ctx context.Context, api *client.API, id string) ([]byte, error)) *cobra.Command {
		return &cobra.Command{
			Use:   verb + " INSTANCE_ID",
			Short: short,
			Args:  ArgsNamed("INSTANCE_ID"),
			RunE: func(cmd *cobra.Command, args []string) error {
				return c.call(cmd, func(ctx context.Context, api *client.API) error {
					body, err := do(ctx, api, args[0])
					if err != nil {
						return err
					}
					return showOne(c, body, func(i client.Instance) table {
						return table{header: instanceHeader, rows: [][]string{instanceRow(i)}}
					})
				})
			},
		}
	}
	getCmd := one("get", "Show an instance", func(ctx context.Context, api *client.API, id string) ([]byte, error) {
		return bodyOf(api.GetInstanceWithResponse(ctx, id))
	})
	stopCmd := one("stop", "Stop an instance (safe to repeat)", func(ctx context.Context, api *client.API, id string) ([]byte, error) {
		return bodyOf(api.DeleteInstanceWithResponse(ctx, id))
	})
	stopCmd.Aliases = []string{"delete"}
	cmd := Group("instances", "Start, list, show and stop workloads on a reservation's devices", createCmd,
		c.instancesListCmd(), getCmd, stopCmd)
	cmd.Aliases = []string{"instance"}
	return cmd
}

func (c *cli) instancesListCmd() *cobra.Command {
	var p pageFlags
	var reservation string
	cmd := &cobra.Command{
		Use:   "list --reservation RESERVATION_ID",
		Short: "List a reservation's instances, oldest first",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params := client.ListInstancesParams{ReservationID: reservation}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				return list(ctx, c, p, func(ctx context.Context, limit *int, cursor *string) ([]byte, error) {
					params.Limit, params.Cursor = limit, cursor
					res, err := api.ListInstancesWithResponse(ctx, &params)
					if err != nil {
						return nil, err
					}
					return res.Body, nil
				}, instanceRow, instanceHeader...)
			})
		},
	}
	addPageFlags(cmd, &p)
	cmd.Flags().StringVar(&reservation, "reservation", "", "the reservation whose instances to list")
	_ = cmd.MarkFlagRequired("reservation")
	return cmd
}
