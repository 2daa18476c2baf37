package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
	"github.com/bettercompute/compute/core"
)

// webhookHeader has VERSION, the one update --if-match takes.
var webhookHeader = []string{"ID", "TENANT", "URL", "ENABLED", "EVENT-TYPES", "FAILURES", "VERSION", "SECRET"}

func webhookRow(w client.WebhookEndpoint) []string {
	failures := "0"
	if w.ConsecutiveFailures != nil {
		failures = itoa(*w.ConsecutiveFailures)
	}
	enabled := yesNo(w.Enabled)
	if w.DisabledReason != nil {
		enabled += " (" + string(*w.DisabledReason) + ")"
	}
	return []string{w.ID, w.Tenant, w.URL, enabled, joinOr(w.EventTypes, "all"), failures, itoa(w.Version), str(w.Secret)}
}

func (c *cli) webhooksCmd() *cobra.Command {
	showEndpoint := func(body []byte) error {
		return showOne(c, body, func(w client.WebhookEndpoint) table {
			return table{header: webhookHeader, rows: [][]string{webhookRow(w)}}
		})
	}
	one := func(verb, short string, do func(ctx context.Context, api *client.API, id string) ([]byte, error)) *cobra.Command {
		return &cobra.Command{
			Use:   verb + " ENDPOINT_ID",
			Short: short,
			Args:  ArgsNamed("ENDPOINT_ID"),
			RunE: func(cmd *cobra.Command, args []string) error {
				return c.call(cmd, func(ctx context.Context, api *client.API) error {
					body, err := do(ctx, api, args[0])
					if err != nil {
						return err
					}
					return showEndpoint(body)
				})
			},
		}
	}

	var p pageFlags
	listCmd := &cobra.Command{
		Use:   "list",
		Short: "List webhook endpoints (never their secrets)",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				return list(ctx, c, p, func(ctx context.Context, limit *int, cursor *string) ([]byte, error) {
					return bodyOf(api.ListWebhookEndpointsWithResponse(ctx, &client.ListWebhookEndpointsParams{Limit: limit, Cursor: cursor}))
				}, webhookRow, webhookHeader...)
			})
		},
	}
	addPageFlags(listCmd, &p)

	var url, description, tenant string
	var types []string
	createCmd := &cobra.Command{
		Use:   "create --url URL [--type T …]",
		Short: "Register an endpoint for the tenant's events; prints its signing secret once",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			only, err := splitTypes(types)
			if err != nil {
				return err
			}
			req := client.CreateWebhookEndpointRequest{URL: url}
			if len(only) > 0 {
				req.EventTypes = &only
			}
			if description != "" {
				req.Description = &description
			}
			if tenant != "" {
				req.Tenant = &tenant
			}
			// A fresh key: a retry after 429 or 503 registers no second
			// endpoint, and answers the first one's secret.
			key := newIdempotencyKey()
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.CreateWebhookEndpointWithResponse(ctx,
					&client.CreateWebhookEndpointParams{IdempotencyKey: &key}, req))
				if err != nil {
					return err
				}
				return showEndpoint(body)
			})
		},
	}
	createCmd.Flags().StringVar(&url, "url", "", "where deliveries are POSTed")
	createCmd.Flags().StringSliceVar(&types, "type", nil, "only these event types (repeatable, or comma-separated; default all)")
	createCmd.Flags().StringVar(&description, "description", "", "a note for people")
	createCmd.Flags().StringVar(&tenant, "tenant", "", "operators: the tenant whose events it receives")
	_ = createCmd.MarkFlagRequired("url")

	var patch client.PatchWebhookEndpointRequest
	var newURL, newDescription string
	var newTypes []string
	var enable, disable bool
	var im ifMatch
	updateCmd := &cobra.Command{
		Use:   "update ENDPOINT_ID [--url URL] [--type T …] [--description D] [--enable | --disable]",
		Short: "Change an endpoint; absent flags leave their field as it is",
		Args:  ArgsNamed("ENDPOINT_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			if f.Changed("url") {
				patch.URL = &newURL
			}
			if f.Changed("description") {
				patch.Description = &newDescription
			}
			if f.Changed("type") {
				only, err := splitTypes(newTypes)
				if err != nil {
					return err
				}
				if only == nil {
					only = []string{}
				}
				patch.EventTypes = &only
			}
			switch {
			case enable && disable:
				return usagef("--enable, --disable: give one of them, not both")
			case enable, disable:
				patch.Enabled = &enable
			}
			if patch == (client.PatchWebhookEndpointRequest{}) {
				return usagef("--url, --type, --description, --enable, --disable: give at least one change")
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.PatchWebhookEndpointWithResponse(ctx, args[0],
					&client.PatchWebhookEndpointParams{IfMatch: im.ptr()}, patch))
				if err != nil {
					return err
				}
				return showEndpoint(body)
			})
		},
	}
	updateCmd.Flags().StringVar(&newURL, "url", "", "the new URL")
	updateCmd.Flags().StringSliceVar(&newTypes, "type", nil, "the new event types (\"\" for all)")
	updateCmd.Flags().StringVar(&newDescription, "description", "", "the new description")
	updateCmd.Flags().BoolVar(&enable, "enable", false, "enable it (clears its failure state)")
	updateCmd.Flags().BoolVar(&disable, "disable", false, "disable it")
	im.add(updateCmd)

	var since string
	recoverCmd := &cobra.Command{
		Use:   "recover ENDPOINT_ID --since TIME",
		Short: "Re-send the events an endpoint did not acknowledge since a time",
		Args:  ArgsNamed("ENDPOINT_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			at, err := parseSince(since, time.Now())
			if err != nil {
				return err
			}
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				body, err := bodyOf(api.RecoverWebhookEndpointWithResponse(ctx, args[0], client.RecoverWebhookEndpointRequest{Since: at}))
				if err != nil {
					return err
				}
				return showOne(c, body, func(r client.RecoverWebhookEndpointResult) table {
					retained := "-"
					if r.RetainedSince != nil {
						retained = r.RetainedSince.UTC().Format(time.RFC3339)
					}
					return table{header: []string{"SCHEDULED", "TRUNCATED", "RETAINED SINCE"},
						rows: [][]string{{itoa(r.Scheduled), yesNo(r.Truncated), retained}}}
				})
			})
		},
	}
	recoverCmd.Flags().StringVar(&since, "since", "", "RFC 3339, or -DURATION: that long ago, such as -2h")
	_ = recoverCmd.MarkFlagRequired("since")

	var ap pageFlags
	attemptsCmd := &cobra.Command{
		Use:   "attempts ENDPOINT_ID",
		Short: "List an endpoint's delivery attempts, newest first",
		Args:  ArgsNamed("ENDPOINT_ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				return list(ctx, c, ap, func(ctx context.Context, limit *int, cursor *string) ([]byte, error) {
					return bodyOf(api.ListWebhookAttemptsWithResponse(ctx, args[0], &client.ListWebhookAttemptsParams{Limit: limit, Cursor: cursor}))
				}, func(a client.WebhookAttempt) []string {
					status := "-"
					if a.Status != nil {
						status = itoa(*a.Status)
					}
					return []string{ts(a.At), a.EventID.String(), itoa(a.Attempt), status, itoa(a.LatencyMs), str(a.Error)}
				}, "AT", "EVENT", "ATTEMPT", "STATUS", "LATENCY-MS", "ERROR")
			})
		},
	}
	addPageFlags(attemptsCmd, &ap)

	cmd := Group("webhooks", "Register and manage webhook endpoints; verify a delivery",
		listCmd, createCmd, updateCmd, recoverCmd, attemptsCmd, c.webhooksVerifyCmd(),
		one("get", "Show an endpoint", func(ctx context.Context, api *client.API, id string) ([]byte, error) {
			return bodyOf(api.GetWebhookEndpointWithResponse(ctx, id))
		}),
		one("delete", "Delete an endpoint with its pending deliveries", func(ctx context.Context, api *client.API, id string) ([]byte, error) {
			return bodyOf(api.DeleteWebhookEndpointWithResponse(ctx, id))
		}),
		one("rotate-secret", "Issue a new signing secret (the old one signs too for 24 h)", func(ctx context.Context, api *client.API, id string) ([]byte, error) {
			return bodyOf(api.RotateWebhookEndpointSecretWithResponse(ctx, id))
		}))
	cmd.Aliases = []string{"webhook"}
	return cmd
}

// parseSince reads RFC 3339 or "-DURATION" before now.
func parseSince(v string, now time.Time) (time.Time, error) {
	if len(v) > 1 && v[0] == '-' {
		d, err := time.ParseDuration(v[1:])
		if err != nil || d < 0 {
			return time.Time{}, usagef("--since: %q is not -DURATION (such as -2h)", v)
		}
		return now.Add(-d).UTC().Truncate(time.Second), nil
	}
	t, err := parseRFC3339("--since", v)
	if errors.Is(err, core.ErrNotRFC3339) {
		return time.Time{}, usagef("--since: %q is not a time: use RFC 3339 (2030-01-02T15:04:05Z) or -DURATION", v)
	}
	return t, err
}

func (c *cli) webhooksVerifyCmd() *cobra.Command {
	var secret, id, timestamp, signature string
	cmd := &cobra.Command{
		Use:   "verify --secret whsec_… --id ID --timestamp TS --signature SIG < body",
		Short: "Check a delivery's signature locally (Standard Webhooks), as a consumer does",
		Long: `verify reads a delivery's raw body from standard input and checks its
webhook-signature under the endpoint's secret, and that webhook-timestamp
is within 5 minutes of now, exactly as package client's VerifyWebhook does
in a consumer. It needs no server.`,
		Args: NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if _, err := strconv.ParseInt(timestamp, 10, 64); err != nil {
				// Bad input (exit 2), not a signature that fails (exit 1).
				return usagef("--timestamp: %q is not the webhook-timestamp header: Unix seconds, such as 1767225600", timestamp)
			}
			body, err := io.ReadAll(c.stdin)
			if err != nil {
				return fmt.Errorf("read the body from standard input: %w", err)
			}
			h := http.Header{}
			h.Set(client.WebhookHeaderID, id)
			h.Set(client.WebhookHeaderTimestamp, timestamp)
			h.Set(client.WebhookHeaderSignature, signature)
			if err := client.VerifyWebhook(secret, h, body); err != nil {
				if err == client.ErrWebhookBadSecret {
					return usagef("--secret: %v", err)
				}
				return err
			}
			if c.output != "table" { // a script reads the verdict, not a sentence
				return c.show([]byte(`{"valid":true}`), nil)
			}
			fmt.Fprintln(c.stdout, "signature valid")
			return nil
		},
	}
	cmd.Flags().StringVar(&secret, "secret", "", "the endpoint's signing secret (whsec_…)")
	cmd.Flags().StringVar(&id, "id", "", "the webhook-id header")
	cmd.Flags().StringVar(&timestamp, "timestamp", "", "the webhook-timestamp header")
	cmd.Flags().StringVar(&signature, "signature", "", "the webhook-signature header")
	for _, f := range []string{"secret", "id", "timestamp", "signature"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}
