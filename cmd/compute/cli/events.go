package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/core"
)

func (c *cli) eventsCmd() *cobra.Command {
	cmd := Group("events", "Read the event log: tail the live stream, or page through it", c.eventsTailCmd(), c.eventsListCmd())
	cmd.Aliases = []string{"event"}
	return cmd
}

// splitTypes flattens repeated and comma-separated --type values.
func splitTypes(in []string) ([]string, error) {
	var out []string
	for _, v := range in {
		for _, t := range strings.Split(v, ",") {
			t = strings.TrimSpace(t)
			if t == "" {
				continue
			}
			if strings.ContainsAny(t, " \t") {
				return nil, usagef("--type: %q is not an event type (such as reservation.booked)", t)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

func (c *cli) eventsTailCmd() *cobra.Command {
	var types []string
	var after, subject string
	var fromStart bool
	cmd := &cobra.Command{
		Use:   "tail",
		Short: "Follow the event stream (SSE), resuming after restarts without gaps",
		Long: `tail prints the events the token may see as they are committed, one per
line, until interrupted: a table row, or with -o json one envelope per line
(JSON Lines; with -o yaml one document each). When the stream ends (the
server restarts, the stream reaches its lifetime, the network fails) it
reconnects with backoff and resumes with Last-Event-ID from the last event
printed, so nothing is missed or repeated; reconnects are noted on stderr.

--subject reservations/ID follows one reservation (any subject an event
names): the server filters the stream, and a tail resumed far behind reads
that subject's events, not the log between them. Another tenant's
subject shows nothing, as one never written about does.

By default it starts at the live feed; --from-start starts at the oldest
retained event and --after CURSOR strictly after a cursor (the CURSOR
column, or a page's nextCursor). Interrupted, tail prints on stderr the
cursor that resumes where it stopped: its last event's, or a later one
that the stream's heartbeat moved it to over events it does not show
(other tenants', or types or subjects left out), so that the cursor of a tail whose
own events stay quiet outlives the retention. If retention pruned the
log past the stream, it ends with CURSOR_EXPIRED (exit code 9) and says
to start again with --from-start.`,
		Example: `  compute events tail
  compute events tail --type reservation.booked,reservation.released -o json
  compute events tail --subject reservations/rsv_… --from-start`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			only, err := splitTypes(types)
			if err != nil {
				return err
			}
			opts := client.SubscribeOptions{Types: only, Subject: subject,
				OnDisconnect: func(err error, wait time.Duration) {
					fmt.Fprintf(c.stderr, "compute: event stream interrupted (%s); resuming in %s\n", terminalSafe(err.Error()), wait.Round(100*time.Millisecond))
				}}
			switch {
			case fromStart && after != "":
				return usagef("--after, --from-start: give one of them, not both")
			case fromStart:
				opts.After = new(string)
			case after != "":
				opts.After = &after
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				// The table's header once the stream has opened (its
				// opening frame moves the resume point), so that a tail
				// refused at once (an expired cursor, a revoked token)
				// leaves no bare header on stdout.
				headed := c.output != "table"
				head := func() {
					if !headed {
						headed = true
						fmt.Fprintln(c.stdout, tailRow("TIME", "TYPE", "SUBJECT", "TENANT", "CURSOR"))
					}
				}
				// Where a tail started now would continue this one: the
				// subscription's resume point, not the last event's cursor,
				// which expires with that event although a quiet tail
				// missed nothing after it.
				first, resume := true, after
				opts.OnResume = func(cursor string) { head(); resume = cursor }
				err := api.Subscribe(ctx, opts, func(ev client.Event) error {
					defer func() { first = false }()
					head()
					return c.printEvent(ev, first)
				})
				if errors.Is(err, context.Canceled) && ctx.Err() != nil {
					// Interrupted: the normal end of a tail. A JSON or YAML
					// envelope carries no cursor, so say where to resume.
					if resume != "" {
						// The cursor may be past events the filters left out.
						again := "--after " + resume + tailFilters(only, subject)
						fmt.Fprintf(c.stderr, "compute: interrupted; resume where it stopped with %s\n", terminalSafe(again))
					}
					return nil
				}
				return tailExpired(err, tailFilters(only, subject))
			})
		},
	}
	cmd.Flags().StringSliceVar(&types, "type", nil, "only these event types (repeatable, or comma-separated)")
	cmd.Flags().StringVar(&after, "after", "", "start strictly after this cursor")
	cmd.Flags().BoolVar(&fromStart, "from-start", false, "start at the oldest retained event")
	cmd.Flags().StringVar(&subject, "subject", "", "only the events of this subject (e.g. reservations/rsv_…)")
	return cmd
}

// tailFilters is the --type and --subject flags of a tail, to repeat in
// the command that resumes or restarts it: its cursor is one of the
// filtered stream's, which may be past events the filters left out.
func tailFilters(only []string, subject string) string {
	var flags string
	if len(only) > 0 {
		flags += " --type " + strings.Join(only, ",")
	}
	if subject != "" {
		flags += " --subject " + subject
	}
	return flags
}

// tailExpired is a tail's CURSOR_EXPIRED with the advice a tail can act
// on. The server's message ends with the API's advice, to list events again
// without a cursor, which for a tail is the --from-start flag, not the list
// command: that part is replaced by a line naming the flag (and the
// filters to keep, tailFilters).
func tailExpired(err error, filters string) error {
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != client.ErrorCodeCURSOREXPIRED {
		return err
	}
	again := "compute events tail --from-start" + filters
	trimmed := *apiErr
	trimmed.Message, _ = strings.CutSuffix(trimmed.Message, ": list events again without a cursor")
	return hintedError{err: &trimmed, hint: "The events after the cursor were pruned: start again from the oldest retained event with `" +
		terminalSafe(again) + "`, and re-read the state you follow (events in between are gone)."}
}

// tailWidths are the widths of a tail's columns but the last (CURSOR): a
// stream cannot be aligned over all its rows as a table is, so its columns
// have fixed widths, the header's too. TIME is RFC 3339 in UTC; TYPE fits
// the longest event type this CLI knows; SUBJECT fits the longest subject
// the server names with its own ids ("node-commands/cmd_" and a UUID;
// "reservations/rsv_…" is one shorter); TENANT fits most tenant ids.
var tailWidths = []int{len("2006-01-02T15:04:05Z"), longestEventType(), len("node-commands/cmd_") + 36, 12}

func longestEventType() int {
	n := len("TYPE")
	for _, t := range core.EventTypes() {
		n = max(n, len(t))
	}
	return n
}

// tailRow is one line of a tail's table: each column starts where the
// header's does, two spaces after the widest value it was sized for. A
// longer value (a device id, a long tenant id) pushes the rest of its row
// right by as much, and the next column that has room to spare starts in
// its place again.
func tailRow(cells ...string) string {
	var b strings.Builder
	at := 0 // where this column starts under the header
	for i, cell := range cells {
		if i > 0 {
			b.WriteString(strings.Repeat(" ", max(2, at-utf8.RuneCountInString(b.String()))))
		}
		b.WriteString(cell)
		if i < len(tailWidths) {
			at += tailWidths[i] + 2
		}
	}
	return b.String()
}

// printEvent prints one event of a tail, at once.
func (c *cli) printEvent(ev client.Event, first bool) error {
	var err error
	switch c.output {
	case "json":
		_, err = fmt.Fprintf(c.stdout, "%s\n", ev.Raw)
	case "yaml":
		var b []byte
		if b, err = jsonToYAML(ev.Raw); err == nil {
			if !first {
				_, _ = c.stdout.Write([]byte("---\n"))
			}
			_, err = c.stdout.Write(b)
		}
	default:
		_, err = fmt.Fprintln(c.stdout, tailRow(ts(ev.Time),
			terminalSafe(ev.Type), terminalSafe(ev.Subject), terminalSafe(str(ev.TenantID)), terminalSafe(ev.Cursor)))
	}
	return err
}

func (c *cli) eventsListCmd() *cobra.Command {
	var types []string
	var after, subject string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Page through the event log (oldest retained first, or after --after)",
		Long: `list prints one page of the event log; pass its nextCursor (printed on
stderr under a table) as --after for the next. A short page (an empty one
too) has read everything you can see: its nextCursor may be past your own
last event, up to the log's newest; poll again with it, not with the
cursor you gave, which retention can expire however quiet your events are.
--subject reservations/ID lists what happened to one reservation, at the
cost of its own events however long the log.`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			only, err := splitTypes(types)
			if err != nil {
				return err
			}
			if limit < 0 {
				return usagef("--limit: %d is negative", limit)
			}
			params := client.ListEventsParams{}
			if after != "" {
				params.After = &after
			}
			if len(only) > 0 {
				params.Types = &only
			}
			if subject != "" {
				params.Subject = &subject
			}
			if limit > 0 {
				params.Limit = &limit
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				res, err := api.ListEventsWithResponse(ctx, &params)
				if err != nil {
					return err
				}
				err = showOne(c, res.Body, func(p client.EventPage) table {
					t := table{header: []string{"TIME", "TYPE", "SUBJECT", "TENANT", "ID"}}
					for _, e := range p.Items {
						t.add(ts(e.Time), e.Type, e.Subject, str(e.TenantID), e.ID.String())
					}
					return t
				})
				if err == nil && c.output == "table" {
					fmt.Fprintf(c.stderr, "next: --after %s\n", res.JSON200.NextCursor)
				}
				return err
			})
		},
	}
	cmd.Flags().StringSliceVar(&types, "type", nil, "only these event types (repeatable, or comma-separated)")
	cmd.Flags().StringVar(&after, "after", "", "events strictly after this cursor")
	cmd.Flags().StringVar(&subject, "subject", "", "only the events of this subject (e.g. reservations/rsv_…)")
	cmd.Flags().IntVar(&limit, "limit", 0, "page size, 1 to 500 (100 when 0)")
	return cmd
}
