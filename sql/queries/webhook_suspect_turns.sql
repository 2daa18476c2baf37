-- name: WebhookSuspectTurnTake :one
-- Gives a deferred suspect delivery of the tenant the next turn of the
-- tenant's line (migration 0064) and moves the line on by spacing_seconds.
-- The turn is the line's next one, or first_seconds from now when the line
-- has fallen behind the clock (nobody waits). wait_seconds is how long
-- from now the turn comes. One row per tenant, updated in place: concurrent
-- takers queue on its lock and each gets a turn of its own.
INSERT INTO webhook_suspect_turns AS t (tenant_id, next_at)
VALUES (sqlc.arg(tenant_id)::text,
        compute_now() + make_interval(secs => sqlc.arg(first_seconds)::float8 + sqlc.arg(spacing_seconds)::float8))
ON CONFLICT (tenant_id) DO UPDATE
   SET next_at = GREATEST(t.next_at, compute_now() + make_interval(secs => sqlc.arg(first_seconds)::float8))
                 + make_interval(secs => sqlc.arg(spacing_seconds)::float8)
RETURNING (EXTRACT(epoch FROM t.next_at - compute_now()) - sqlc.arg(spacing_seconds)::float8)::float8 AS wait_seconds;

-- name: WebhookSuspectTurnRecall :exec
-- Brings back at once the deliveries of an endpoint that has just answered
-- for the first time (or again, after failing) which wait for a later turn
-- of their tenant's line: due by their own schedule, not claimed, their
-- work item put off. Without it a recovered endpoint's backlog would wait
-- out a line that was set for an endpoint that hangs. Deliveries put off
-- by their retry schedule (next_attempt_at later) keep their time. The
-- tenant's line starts afresh too: turns already given to its other
-- endpoints' deliveries stand, and the next deferral takes a turn from
-- now rather than behind a backlog that may have gone.
WITH line AS (
  UPDATE webhook_suspect_turns t
     SET next_at = compute_now()
    FROM webhook_endpoints e
   WHERE e.id = sqlc.arg(endpoint_id)::text AND t.tenant_id = e.tenant_id AND t.next_at > compute_now()
)
UPDATE work_queue w
   SET not_before = compute_now()
  FROM webhook_deliveries d
 WHERE d.endpoint_id = sqlc.arg(endpoint_id)::text
   AND d.state = 'pending' AND d.next_attempt_at <= compute_now()
   AND w.kind = 'webhook.deliver' AND w.key = d.id::text
   AND w.claimed_by IS NULL AND w.not_before > compute_now();
