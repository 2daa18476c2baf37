// Package webhook delivers the event log to tenants' HTTP endpoints,
// following Standard Webhooks 1.0, and gives consumers Verify to check what
// they receive.
//
// Delivery is split in two so that no network call ever happens inside a
// transaction and one dead endpoint never holds up another:
//
//   - Scheduler is an outbox.TxSink: in the dispatcher's transaction it
//     inserts one webhook_deliveries row per matching endpoint and event and
//     enqueues one work-queue item ("webhook.deliver") per row. No HTTP.
//   - Deliverer is the work-queue handler: it loads one delivery, POSTs it
//     outside any transaction, then records the attempt and the outcome in a
//     transaction fenced by the worker's shard lease, and asks the queue to
//     run it again after the next delay of the retry schedule.
//
// Every delay is a work_queue not_before, i.e. compute_now(): in tests the
// simulated clock drives the whole retry schedule.
//
// Endpoint state and the webhook_endpoint.* events are written by command
// handlers in package commands (CreateWebhookEndpoint and its siblings);
// this package validates, generates ids and secrets, and calls them.
// Deliveries, attempts and the failure clock are its own bookkeeping.
package webhook
