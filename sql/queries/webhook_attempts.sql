-- name: WebhookAttemptInsert :exec
INSERT INTO webhook_attempts (delivery_id, endpoint_id, event_id, attempt, status, latency_ms, response_snippet, error)
VALUES (sqlc.arg(delivery_id), sqlc.arg(endpoint_id), sqlc.arg(event_id), sqlc.arg(attempt),
        sqlc.narg(status), sqlc.arg(latency_ms), sqlc.arg(response_snippet), sqlc.narg(error));

-- name: WebhookAttemptListByEndpoint :many
-- Newest first, keyset by id: before_id 0 starts at the newest.
SELECT * FROM webhook_attempts
 WHERE endpoint_id = sqlc.arg(endpoint_id)
   AND (sqlc.arg(before_id)::bigint = 0 OR id < sqlc.arg(before_id)::bigint)
 ORDER BY id DESC
 LIMIT sqlc.arg(max_rows);
