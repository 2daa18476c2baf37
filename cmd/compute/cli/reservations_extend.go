package cli

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

// reservationsExtendCmd is `compute reservations extend`: --end sets the
// new end, --by adds to the end it reads, and only to that version.
func (c *cli) reservationsExtendCmd() *cobra.Command {
	var end, by, key string
	var im ifMatch
	cmd := &cobra.Command{
		Use:   "extend RESERVATION_ID (--end TIME | --by DURATION)",
		Short: "Move a reservation's end later, keeping its devices",
		Args:  ArgsNamed("RESERVATION_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (end == "") == (by == "") {
				return usagef("--end, --by: give exactly one of them")
			}
			var newEnd time.Time
			var add time.Duration
			var err error
			if end != "" {
				if newEnd, err = parseWhen("--end", end, time.Now()); err != nil {
					return err
				}
			} else if add, err = time.ParseDuration(by); err != nil || add <= 0 {
				return usagef("--by: %q is not a positive duration (such as 30m or 2h)", by)
			}
			keyGiven := key != ""
			if !keyGiven {
				key = newIdempotencyKey()
			}
			var relative []string
			if relativeTime(end) {
				relative = append(relative, "--end "+end)
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				if add > 0 {
					cur, err := c.getReservation(ctx, api, args[0])
					if err != nil {
						return err
					}
					if cur.JSON200 == nil { // not found, or refused: the error envelope says why
						return showOne(c, cur.Body, func(client.ReadReservationDetail) table { return table{} })
					}
					newEnd = cur.JSON200.End.Add(add)
					// Only from the end it read: a change made since (another
					// extend, say) is a 409 to run again, not less time added.
					if im.version == "" {
						im.version = strconv.Itoa(cur.JSON200.Version)
					}
				}
				res, err := api.ExtendReservationWithResponse(ctx, args[0],
					&client.ExtendReservationParams{IdempotencyKey: &key, IfMatch: im.ptr()}, client.ExtendReservationRequest{End: newEnd})
				if err != nil {
					return keyReusedHint(err, keyGiven, relative, add > 0)
				}
				c.notePosition(res.Body)
				return showOne(c, res.Body, func(r client.ReservationResult) table {
					return table{header: reservationHeader, rows: [][]string{reservationResultRow(r)}}
				})
			})
		},
	}
	cmd.Flags().StringVar(&end, "end", "", "the new end: RFC 3339, or +DURATION from now")
	cmd.Flags().StringVar(&by, "by", "", "add this much to the current end (1h, 30m)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "the Idempotency-Key to send (default: a fresh one)")
	im.add(cmd)
	return cmd
}
