// Package billing hands closed usage windows to the billing endpoint
// (Better IAM billing, or any receiver of the same requests), at least
// once.
//
// A usage window is one UTC hour of one allocation's reserved time
// (projections.UsageWindows); it is closed (final) once its reservation has
// ended. The billing sink is an outbox sink with its own cursor and lease
// (singleton:outbox-dispatch:billing): for every reservation that ended in
// a batch of the log, it POSTs each closed window to the configured URL,
// signed like a webhook (Standard Webhooks headers, webhook.SetHeaders),
// with the window's key cmp:<allocationId>:<windowStart> as the webhook-id
// and the Idempotency-Key. The cursor moves past the batch only once the
// endpoint accepted every window of it (2xx); a failed attempt is retried
// with back-off (billing_deliveries keeps the schedule, on compute_now()),
// and a crash or a lost lease sends the batch again. Receivers deduplicate
// by the key: examples/billing-consumer shows how. See
// docs/concepts/billing.md.
package billing
