package cli

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

func (c *cli) reservationsCmd() *cobra.Command {
	cmd := Group("reservations", "Reserve GPUs, vCPU, memory and disk for a time window",
		c.reservationsCreateCmd(), c.reservationsListCmd(), c.reservationsGetCmd(), c.reservationsExtendCmd(),
		c.reservationChangeCmd("release", "Give a booked or active reservation back (refunds quota from now on)",
			func(ctx context.Context, api *client.API, id string, p ifMatch) ([]byte, error) {
				res, err := api.ReleaseReservationWithResponse(ctx, id, &client.ReleaseReservationParams{IfMatch: p.ptr()})
				return bodyOf(res, err)
			}),
		c.reservationChangeCmd("cancel", "Withdraw a pending reservation (a booked or active one is refused: release it instead)",
			func(ctx context.Context, api *client.API, id string, p ifMatch) ([]byte, error) {
				res, err := api.CancelReservationWithResponse(ctx, id, &client.CancelReservationParams{IfMatch: p.ptr()})
				return bodyOf(res, err)
			}))
	cmd.Aliases = []string{"reservation", "rsv"}
	return cmd
}

// reservationHeader ends with VERSION, the one extend, release and cancel
// --if-match take.
var reservationHeader = []string{"ID", "STATE", "TENANT", "POOL", "GPUS", "NODE", "DEVICES", "START", "END", "CLASS", "VERSION"}

func reservationResultRow(r client.ReservationResult) []string {
	return []string{r.ID, string(r.State), r.Tenant, placeOf(r.PoolID, r.SiteID), gpusText(r.Gpus, ptrOr(r.GpuModel), ptrOr(r.MigProfile),
		string(ptrOr(r.SlotKind))), str(r.NodeID), joinOr(r.DeviceIds, "-"), ts(r.Start), ts(r.End), r.PriorityClass, itoa(r.Version)}
}

// placeOf is the POOL cell of a reservation: its pool, or for one asked
// of a site (any of its pools) "site:" and the site, as the API answers
// with siteId and no poolId, placed or not (the NODE cell says where), and
// as a waiting line's scope is written (QUEUE, "pool:p" or "site:s").
func placeOf(pool, site *string) string {
	if ptrOr(pool) == "" && ptrOr(site) != "" {
		return "site:" + *site
	}
	return str(pool)
}

// specGpus is the GPUS cell of a reservation read back (list, get).
func specGpus(s client.ReservationSpec) string {
	return gpusText(s.Gpu.Count, ptrOr(s.Gpu.Model), ptrOr(s.Gpu.MigProfile), string(ptrOr(s.Gpu.SlotKind)))
}

// gpusText is what a reservation asked for of GPUs, in a table cell: "2
// H100-80GB", "1 mig 1g.10gb", "1 time-slice", "2 gpu" (any model), "-"
// for none.
func gpusText(count int, model, migProfile, slotKind string) string {
	switch {
	case count == 0:
		return "-"
	case migProfile != "":
		return fmt.Sprintf("%d mig %s", count, migProfile)
	case slotKind != "":
		return fmt.Sprintf("%d %s", count, slotKind)
	case model != "":
		return fmt.Sprintf("%d %s", count, model)
	default:
		return fmt.Sprintf("%d gpu", count)
	}
}

func (c *cli) reservationsCreateCmd() *cobra.Command {
	var (
		pool, site, gpuModel, migProfile, slotKind, start, end, duration, key string
		gpus                                                                  int
		vcpu, memoryMB, diskGB                                                int64
		tolerations                                                           []string
		priorityClass                                                         string
		noPreempt                                                             bool
	)
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Reserve capacity in a pool or a site for [start, end)",
		Long: `create charges the tenant's quota and places the request on one node: whole
GPUs (optionally of --gpu-model), MIG instances (--mig-profile) or slots
(--slot-kind), with vCPU, memory and disk on the same node. When no node
fits, the reservation is pending and retried. --priority-class names its
priority class (default: the default class; "priority-classes allowed"
lists the ones the tenant may use); --no-preempt refuses a preemptible
class. It is sent with an Idempotency-Key (a fresh one unless
--idempotency-key is given), so a retry after 429 or 503 never books twice.

Times are RFC 3339 (2030-01-02T15:04:05Z), "now", or "+DURATION" from now
(+10m, +1h30m). A window is at least 1 minute and at most 90 days long
unless the operator set other bounds (COMPUTE_MIN_RESERVATION_LENGTH,
COMPUTE_MAX_RESERVATION_LENGTH); the server refuses others.`,
		Example: `  compute reservations create --pool demo-pool --gpus 2 --gpu-model H100-80GB --start +1m --duration 1h
  compute reservations create --site demo-site --mig-profile 1g.10gb --gpus 1 --start now --end +8h`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			req := client.CreateReservationRequest{}
			if (pool == "") == (site == "") {
				return usagef("--pool, --site: give exactly one of them")
			}
			if pool != "" {
				req.PoolID = &pool
			} else {
				req.SiteID = &site
			}
			var err error
			if req.Start, err = parseWhen("--start", start, now); err != nil {
				return err
			}
			if req.End, err = parseEnd(end, duration, req.Start, now); err != nil {
				return err
			}
			flags := cmd.Flags()
			if flags.Changed("gpus") {
				if gpus < 0 {
					return usagef("--gpus: %d is negative", gpus)
				}
				req.Gpus = &gpus
			}
			for name, v := range map[string]*int64{"vcpu": &vcpu, "memory-mb": &memoryMB, "disk-gb": &diskGB} {
				if flags.Changed(name) {
					if *v < 0 {
						return usagef("--%s: %d is negative", name, *v)
					}
					switch name {
					case "vcpu":
						req.Vcpu = v
					case "memory-mb":
						req.MemoryMb = v
					case "disk-gb":
						req.DiskGb = v
					}
				}
			}
			if gpuModel != "" {
				req.GpuModel = &gpuModel
			}
			if migProfile != "" {
				req.MigProfile = &migProfile
			}
			if slotKind != "" {
				k := client.CreateReservationRequestSlotKind(slotKind)
				if !k.Valid() {
					return usagef("--slot-kind: %q is not one of time-slice, mps", slotKind)
				}
				req.SlotKind = &k
			}
			if len(tolerations) > 0 {
				ts := make([]client.Taint, 0, len(tolerations))
				for _, t := range tolerations {
					taint, err := parseTaint("--toleration", t)
					if err != nil {
						return err
					}
					ts = append(ts, taint)
				}
				req.Tolerations = &ts
			}
			if priorityClass != "" {
				req.PriorityClass = &priorityClass
			}
			if noPreempt {
				req.Preemptible = new(bool) // false: "do not preempt me"
			}
			keyGiven := key != ""
			if !keyGiven {
				key = newIdempotencyKey()
			}
			var relative []string
			if relativeTime(start) {
				relative = append(relative, "--start "+start)
			}
			if relativeTime(end) {
				relative = append(relative, "--end "+end)
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				res, err := api.CreateReservationWithResponse(ctx, &client.CreateReservationParams{IdempotencyKey: &key}, req)
				if err != nil {
					return keyReusedHint(err, keyGiven, relative, false)
				}
				c.notePosition(res.Body)
				return showOne(c, res.Body, func(r client.ReservationResult) table {
					return table{header: reservationHeader, rows: [][]string{reservationResultRow(r)}}
				})
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&pool, "pool", "", "the pool to place it in")
	f.StringVar(&site, "site", "", "the site to place it in (any of its pools)")
	f.IntVar(&gpus, "gpus", 0, "how many GPU atoms (whole GPUs, MIG instances or slots)")
	f.StringVar(&gpuModel, "gpu-model", "", "GPUs of this model (H100-80GB, …), whole or as MIG instances or slots")
	f.StringVar(&migProfile, "mig-profile", "", "MIG instances of this profile (1g.10gb, …)")
	f.StringVar(&slotKind, "slot-kind", "", "slots of this kind: time-slice or mps")
	f.Int64Var(&vcpu, "vcpu", 0, "vCPUs on the same node (0: its workloads get only CPU time no one else wants)")
	f.Int64Var(&memoryMB, "memory-mb", 0, "memory in MB on the same node (0: no limit, and first to be OOM-killed)")
	f.Int64Var(&diskGB, "disk-gb", 0, "disk in GB on the same node")
	f.StringVar(&start, "start", "", "when it starts: RFC 3339, now, or +DURATION")
	f.StringVar(&end, "end", "", "when it ends (exclusive): RFC 3339, or +DURATION from now")
	f.StringVar(&duration, "duration", "", "how long from --start (instead of --end): 1h, 30m, …")
	f.StringSliceVar(&tolerations, "toleration", nil, "tolerate a node taint KEY[=VALUE] (repeatable)")
	f.StringVar(&priorityClass, "priority-class", "", "its priority class (default: the default class)")
	f.BoolVar(&noPreempt, "no-preempt", false, "refuse a preemptible priority class (sends preemptible: false)")
	f.StringVar(&key, "idempotency-key", "", "the Idempotency-Key to send (default: a fresh one)")
	_ = cmd.MarkFlagRequired("start")
	_ = cmd.RegisterFlagCompletionFunc("slot-kind", cobra.FixedCompletions([]string{"time-slice", "mps"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (c *cli) reservationsListCmd() *cobra.Command {
	var p pageFlags
	var state, tenant, minPosition string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List reservations (your tenant's; operators see every tenant's)",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params := client.ListReservationsParams{}
			if state != "" {
				s := client.ListReservationsParamsState(state)
				if !s.Valid() {
					return usagef("--state: %q is not one of pending, booked, active, released, expired, cancelled, failed, preempted", state)
				}
				params.State = &s
			}
			if tenant != "" {
				params.Tenant = &tenant
			}
			if minPosition != "" {
				params.MinPosition = &minPosition
			} else {
				params.MinPosition = c.lastPosition() // this CLI's own writes
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				return list(ctx, c, p, func(ctx context.Context, limit *int, cursor *string) ([]byte, error) {
					params.Limit, params.Cursor = limit, cursor
					res, err := api.ListReservationsWithResponse(ctx, &params)
					if minPosition == "" && params.MinPosition != nil && c.refusedOwnPosition(err) {
						params.MinPosition = nil
						res, err = api.ListReservationsWithResponse(ctx, &params)
					}
					if err != nil {
						return nil, err
					}
					return res.Body, nil
				}, func(r client.ReadReservation) []string {
					return []string{r.ID, string(r.State), r.Tenant, placeOf(r.PoolID, r.SiteID), specGpus(r.Spec), str(r.NodeID),
						joinOr(r.DeviceIds, "-"), ts(r.Start), ts(r.End), r.PriorityClass, itoa(r.Version)}
				}, reservationHeader...)
			})
		},
	}
	addPageFlags(cmd, &p)
	cmd.Flags().StringVar(&state, "state", "", "only reservations in this state")
	cmd.Flags().StringVar(&tenant, "tenant", "", "operators: only this tenant's")
	cmd.Flags().StringVar(&minPosition, "min-position", "", "wait until the read model has this position (a command's position)")
	_ = cmd.RegisterFlagCompletionFunc("state", cobra.FixedCompletions(
		[]string{"pending", "booked", "active", "released", "expired", "cancelled", "failed", "preempted"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (c *cli) reservationsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get RESERVATION_ID",
		Short: "Show a reservation with its request, charges and allocation (-o yaml for all of it)",
		Args:  ArgsNamed("RESERVATION_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				res, err := c.getReservation(ctx, api, args[0])
				if err != nil {
					return err
				}
				return showOne(c, res.Body, func(r client.ReadReservationDetail) table {
					row := []string{r.ID, string(r.State), r.Tenant, placeOf(r.PoolID, r.SiteID), specGpus(r.Spec),
						str(r.NodeID), joinOr(r.DeviceIds, "-"), ts(r.Start), ts(r.End), r.PriorityClass, itoa(r.Version)}
					if why := endedBecause(r.Conditions); why != "" {
						// Ended by the system (preempted, failed): by whom or why.
						return table{header: append(slices.Clone(reservationHeader), "WHY"), rows: [][]string{append(row, why)}}
					}
					if r.Queue == nil {
						return table{header: reservationHeader, rows: [][]string{row}}
					}
					// Pending: its place in the waiting line, and why it waits.
					return table{header: append(slices.Clone(reservationHeader), "QUEUE", "WAITING ON"),
						rows: [][]string{append(row, queuePlace(*r.Queue), r.Queue.Reason)}}
				})
			})
		},
	}
}

// getReservation reads a reservation at this CLI's last write to the
// target (lastPosition), or without it once the server refused it.
func (c *cli) getReservation(ctx context.Context, api *client.API, id string) (*client.GetReservationResponse, error) {
	params := client.GetReservationParams{MinPosition: c.lastPosition()}
	res, err := api.GetReservationWithResponse(ctx, id, &params)
	if params.MinPosition != nil && c.refusedOwnPosition(err) {
		params.MinPosition = nil
		res, err = api.GetReservationWithResponse(ctx, id, &params)
	}
	return res, err
}

// reservationChangeCmd is release or cancel: a POST on the reservation
// with no body, answered with the reservation.
func (c *cli) reservationChangeCmd(verb, short string,
	do func(context.Context, *client.API, string, ifMatch) ([]byte, error)) *cobra.Command {
	var im ifMatch
	cmd := &cobra.Command{
		Use:   verb + " RESERVATION_ID",
		Short: short,
		Args:  ArgsNamed("RESERVATION_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := do(ctx, api, args[0], im)
				c.notePosition(body)
				if err != nil {
					return err
				}
				return showOne(c, body, func(r client.ReservationResult) table {
					return table{header: reservationHeader, rows: [][]string{reservationResultRow(r)}}
				})
			})
		},
	}
	im.add(cmd)
	return cmd
}

// queuePlace is where a pending reservation stands in its line: "3/105 in
// pool:p", or the line alone before the line first ranked it.
func queuePlace(q client.ReservationQueue) string {
	if q.Position == 0 {
		return "not ranked yet in " + q.Scope
	}
	return itoa(int64(q.Position)) + "/" + itoa(int64(q.Queued)) + " in " + q.Scope
}

// endedBecause is the message of a Preempted or AssignmentFailed condition
// that holds ("" when none does): why the system ended the reservation.
func endedBecause(conds []client.ReservationCondition) string {
	for _, c := range conds {
		if c.Status && (c.Type == "Preempted" || c.Type == "AssignmentFailed") {
			return c.Type + ": " + str(c.Message)
		}
	}
	return ""
}
