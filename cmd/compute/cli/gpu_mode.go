package cli

// How an operator changes the way a GPU is shared from the command line:
// PUT /v1/gpus/{id}/mode, which had no command, so switching a GPU between
// whole, MIG, time-slice and MPS took curl and the JSON of a layout.

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

func (c *cli) nodesSetModeCmd() *cobra.Command {
	var im ifMatch
	var slots int
	var mig string
	cmd := &cobra.Command{
		Use:   "set-mode GPU_ID MODE",
		Short: "Change how a GPU is shared: exclusive, mig (--mig), time-slice or mps (--slots)",
		Long: `set-mode replaces a GPU's sharing layout: exclusive (the GPU is one bookable
unit), mig (its MIG instances, one per profile of --mig), or time-slice / mps
(--slots shared slots, 1 to 48). It is refused with CONFLICT while anything on
the GPU is booked now or later: release its reservations first. Setting the
layout the GPU already has changes nothing.`,
		Example: `  compute nodes set-mode GPU-0 time-slice --slots 4
  compute nodes set-mode GPU-0 mig --mig 3g.40gb,2g.20gb,1g.10gb
  compute nodes set-mode GPU-0 exclusive`,
		Args: ArgsNamed("GPU_ID", "MODE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			layout := client.GPULayout{Mode: client.GPULayoutMode(args[1])}
			if !layout.Mode.Valid() {
				return usagef("MODE: %q is not one of exclusive, mig, time-slice, mps", args[1])
			}
			// The server checks the layout against the mode (slots for
			// time-slice and mps only, profiles for mig only) and the GPU.
			if cmd.Flags().Changed("slots") {
				layout.Slots = &slots
			}
			if mig != "" {
				profiles := strings.Split(mig, ",")
				for i := range profiles {
					profiles[i] = strings.TrimSpace(profiles[i])
				}
				layout.Mig = &profiles
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.SetGPUModeWithResponse(ctx, args[0], &client.SetGPUModeParams{IfMatch: im.ptr()}, layout))
				if err != nil {
					return err
				}
				return showOne(c, body, func(d client.DeviceResult) table {
					return table{header: []string{"ID", "MODE", "HEALTH", "QUARANTINED", "VERSION"},
						rows: [][]string{{d.ID, string(d.Mode), string(d.Health), yesNo(d.Quarantined), itoa(d.Version)}}}
				})
			})
		},
	}
	cmd.Flags().IntVar(&slots, "slots", 0, "time-slice or mps: how many shared slots (1 to 48)")
	cmd.Flags().StringVar(&mig, "mig", "", "mig: the instances' profiles, comma-separated (1g.10gb,3g.40gb)")
	im.add(cmd)
	return cmd
}
