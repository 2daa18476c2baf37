-- name: WebhookAttemptInsert :execrows
-- Zero rows when the endpoint was deleted while the attempt ran (its
-- delivery went with it, by cascade): there is nothing left to record the
-- attempt against, and a foreign-key error would only fail the recording
-- and run the item again. The endpoint is locked FOR KEY SHARE before the
-- delivery, in the order a delete removes them (the endpoint, then its
-- deliveries by cascade): a delete in flight is waited for and then finds
-- nothing here, a later one waits for this transaction. Locked in the other
-- order, as the two foreign-key checks did, the delete waited for the
-- delivery this held while this waited for the endpoint the delete held: a
-- deadlock.
WITH e AS MATERIALIZED (
  SELECT e.id FROM webhook_endpoints e WHERE e.id = sqlc.arg(endpoint_id) FOR KEY SHARE
), d AS MATERIALIZED (
  SELECT d.id FROM webhook_deliveries d JOIN e ON e.id = d.endpoint_id
   WHERE d.id = sqlc.arg(delivery_id)
     FOR KEY SHARE OF d
)
INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_id, attempt, status, latency_ms, response_snippet, error)
SELECT d.id, sqlc.arg(endpoint_id), sqlc.arg(event_id), sqlc.arg(attempt),
       sqlc.narg(status), sqlc.arg(latency_ms), sqlc.arg(response_snippet), sqlc.narg(error)
  FROM d;

-- name: WebhookAttemptListByEndpoint :many
-- Newest first, keyset by id: before_id 0 starts at the newest.
SELECT * FROM webhook_attempts
 WHERE endpoint_id = sqlc.arg(endpoint_id)
   AND (sqlc.arg(before_id)::bigint = 0 OR id < sqlc.arg(before_id)::bigint)
 ORDER BY id DESC
 LIMIT sqlc.arg(max_rows);
