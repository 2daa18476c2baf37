-- Retention (docs/concepts/retention.md): the statements of the pruning
-- reconciler (commands.Pruner, work-queue kind retention.prune) and the
-- counts `compute check` reports. Each prune statement deletes at most
-- max_rows rows and runs in its own short transaction, fenced by the
-- pruner's shard lease, so pruning never holds long locks. A retention of
-- retention_seconds is measured on compute_now().

-- name: RetentionSinkCursorLowest :many
-- The durable outbox sink furthest behind (no row when no sink has run):
-- pruning never passes its cursor, so no sink misses an event.
SELECT sink, txid, seq, updated_at FROM outbox_cursors ORDER BY txid, seq LIMIT 1;

-- name: RetentionOutboxPrune :execrows
-- Deletes the oldest events, always a prefix of the log in position order
-- (CURSOR_EXPIRED relies on it: a cursor at or above the oldest retained
-- event has missed nothing). The prefix ends before the first event that
-- must stay: one younger than the retention (times do not follow positions
-- exactly), one with a webhook delivery still pending, or any at or above
-- below (the caller's bound: the newest visible event, which is always
-- kept so that a caught-up cursor stays valid, and the position after the
-- lowest sink cursor). Positions below the newest visible event belong to
-- committed transactions only.
WITH candidates AS (
  SELECT o.txid, o.seq,
         (o.time < compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)
          AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
                           WHERE d.event_id = o.id AND d.state = 'pending')) AS eligible
    FROM outbox o
   WHERE (o.txid, o.seq) < (sqlc.arg(below_txid)::xid8, sqlc.arg(below_seq)::bigint)
   ORDER BY o.txid, o.seq
   LIMIT sqlc.arg(max_rows)
), prefix AS (
  SELECT c.txid, c.seq,
         bool_and(c.eligible) OVER (ORDER BY c.txid, c.seq ROWS UNBOUNDED PRECEDING) AS prunable
    FROM candidates c
)
DELETE FROM outbox o USING prefix p
 WHERE o.txid = p.txid AND o.seq = p.seq AND p.prunable;

-- name: RetentionIdempotencyKeysPrune :execrows
-- Deletes expired idempotency keys (an expired key is free again anyway:
-- IdempotencyKeyDeleteExpired). SKIP LOCKED: a key a request is reusing
-- right now is left to that request.
DELETE FROM idempotency_keys k USING (
  SELECT x.tenant_id, x.identity, x.key FROM idempotency_keys x
   WHERE x.expires_at <= compute_now()
   ORDER BY x.expires_at
   LIMIT sqlc.arg(max_rows)
     FOR UPDATE SKIP LOCKED) e
 WHERE k.tenant_id = e.tenant_id AND k.identity = e.identity AND k.key = e.key;

-- name: RetentionWebhookAttemptsPrune :execrows
-- Deletes webhook attempts older than the attempt retention.
DELETE FROM webhook_attempts a USING (
  SELECT x.id FROM webhook_attempts x
   WHERE x.at < compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)
   ORDER BY x.at
   LIMIT sqlc.arg(max_rows)) e
 WHERE a.id = e.id;

-- name: RetentionWebhookDeliveriesPrune :execrows
-- Deletes finished webhook deliveries (succeeded, failed, abandoned) last
-- changed before the retention, with their attempts (ON DELETE CASCADE). A
-- succeeded delivery is kept while its event is: a recover
-- (WebhookDeliveryRecover) must still see that it succeeded, or it would
-- send the event again. A failed or abandoned one a recover simply
-- schedules anew.
DELETE FROM webhook_deliveries d USING (
  SELECT x.id FROM webhook_deliveries x
   WHERE x.state <> 'pending'
     AND x.updated_at < compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)
     AND (x.state <> 'succeeded' OR NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = x.event_id))
   ORDER BY x.updated_at
   LIMIT sqlc.arg(max_rows)
     FOR UPDATE SKIP LOCKED) e
 WHERE d.id = e.id;

-- name: RetentionBillingDeliveriesPrune :execrows
-- Deletes the record of billing windows the receiver accepted before the
-- retention. The billing sink reads it to skip a window already sent when
-- a batch of the log comes to it again, which happens only while its
-- cursor has not passed that batch: a row older than the retention matters
-- only to a sink held back that long, which then sends the window again
-- under the same key (receivers deduplicate by it). A window not yet
-- accepted keeps its row whatever its age: it is its retry schedule.
DELETE FROM billing_deliveries d USING (
  SELECT x.key FROM billing_deliveries x
   WHERE x.delivered_at < compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)
   ORDER BY x.delivered_at
   LIMIT sqlc.arg(max_rows)
     FOR UPDATE SKIP LOCKED) e
 WHERE d.key = e.key;

-- name: RetentionAuthzChangesPrune :execrows
-- Deletes the revocation feed's changes older than kept_seconds. The feed
-- is read from where it ended when a process started, a few seconds behind
-- at most while the process can reach the database; the state it reports
-- (api_tokens.revoked_at, node_join_tokens.revoked_at) is kept. The
-- newest change stays, so the feed never looks empty to a starting reader.
DELETE FROM authz_changes c USING (
  SELECT x.txid, x.seq FROM authz_changes x
   WHERE x.time < compute_now() - make_interval(secs => sqlc.arg(kept_seconds)::float8)
     AND (x.txid, x.seq) < (SELECT h.txid, h.seq FROM authz_changes h ORDER BY h.txid DESC, h.seq DESC LIMIT 1)
   ORDER BY x.txid, x.seq
   LIMIT sqlc.arg(max_rows)) e
 WHERE c.txid = e.txid AND c.seq = e.seq;

-- name: RetentionNodeJobsPrune :execrows
-- Compacts the node journal kept in node_commands: deletes node jobs that
-- finished before the retention. An assign or unassign job goes only with
-- the whole history of its allocation on the node, once that history can
-- no longer matter to reconcile and resync: the allocation is not live,
-- none of its jobs is open or finished within the retention, and the last
-- of them that succeeded is not an assign (the daemon cannot hold it; see
-- mayHold). The oldest jobs go first (seq order), so a batch that stops
-- inside an allocation's history leaves a suffix of it, of which the same
-- holds. An unassign of an allocation the control plane never knew
-- (allocation_id NULL) goes like any other job. Keep the rule in step with
-- RetentionNodeJobsOverdue.
DELETE FROM node_commands c USING (
  SELECT j.id FROM node_commands j
   WHERE j.created_at < compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)
     AND j.state IN ('succeeded', 'failed', 'cancelled', 'timed-out')
     AND COALESCE(j.finished_at, j.created_at) < compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)
     AND (j.kind NOT IN ('assign', 'unassign') OR j.allocation_id IS NULL OR (
          NOT EXISTS (SELECT 1 FROM allocations a JOIN reservations r ON r.id = a.reservation_id
                       WHERE a.id = j.allocation_id AND a.released_at IS NULL AND r.state IN ('booked', 'active'))
          AND NOT EXISTS (SELECT 1 FROM node_commands o
                           WHERE o.node_id = j.node_id AND o.allocation_id = j.allocation_id
                             AND o.kind IN ('assign', 'unassign')
                             AND (o.state IN ('queued', 'sent', 'running')
                                  OR COALESCE(o.finished_at, o.created_at)
                                     >= compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)))
          AND NOT EXISTS (SELECT 1 FROM node_commands s
                           WHERE s.node_id = j.node_id AND s.allocation_id = j.allocation_id
                             AND s.kind = 'assign' AND s.state = 'succeeded'
                             AND NOT EXISTS (SELECT 1 FROM node_commands u
                                              WHERE u.node_id = j.node_id AND u.allocation_id = j.allocation_id
                                                AND u.kind = 'unassign' AND u.state = 'succeeded'
                                                AND u.seq > s.seq))))
   ORDER BY j.seq
   LIMIT sqlc.arg(max_rows)) e
 WHERE c.id = e.id;

-- name: RetentionInstancesPrune :execrows
-- Deletes instances that ended (stopped, failed, succeeded) before the
-- retention, oldest first, through instances_ended: an ended instance's
-- updated_at is when it ended (InstanceUpdateState never changes it
-- again). An instance whose node jobs are still there waits for them
-- (RetentionNodeJobsPrune, in the same run just before): they reference it
-- (node_commands.instance_id), and a late result of one still moves it.
-- Nothing else references an instance. SKIP LOCKED: an instance a request
-- holds at this moment (a DELETE of one that ended) is left for the next
-- run. RetentionOverdue counts the same instances whether or not their
-- jobs hold them back.
DELETE FROM instances i USING (
  SELECT x.id FROM instances x
   WHERE x.state IN ('stopped', 'failed', 'succeeded')
     AND x.updated_at < compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)
     AND NOT EXISTS (SELECT 1 FROM node_commands c WHERE c.instance_id = x.id)
   ORDER BY x.updated_at
   LIMIT sqlc.arg(max_rows)
     FOR UPDATE SKIP LOCKED) e
 WHERE i.id = e.id;

-- name: RetentionNodeJobsOverdue :one
-- How many node jobs RetentionNodeJobsPrune would delete at this moment (the same
-- rule), for `compute check`.
SELECT count(*) FROM node_commands j
 WHERE j.created_at < compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)
   AND j.state IN ('succeeded', 'failed', 'cancelled', 'timed-out')
   AND COALESCE(j.finished_at, j.created_at) < compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)
   AND (j.kind NOT IN ('assign', 'unassign') OR j.allocation_id IS NULL OR (
        NOT EXISTS (SELECT 1 FROM allocations a JOIN reservations r ON r.id = a.reservation_id
                     WHERE a.id = j.allocation_id AND a.released_at IS NULL AND r.state IN ('booked', 'active'))
        AND NOT EXISTS (SELECT 1 FROM node_commands o
                         WHERE o.node_id = j.node_id AND o.allocation_id = j.allocation_id
                           AND o.kind IN ('assign', 'unassign')
                           AND (o.state IN ('queued', 'sent', 'running')
                                OR COALESCE(o.finished_at, o.created_at)
                                   >= compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)))
        AND NOT EXISTS (SELECT 1 FROM node_commands s
                         WHERE s.node_id = j.node_id AND s.allocation_id = j.allocation_id
                           AND s.kind = 'assign' AND s.state = 'succeeded'
                           AND NOT EXISTS (SELECT 1 FROM node_commands u
                                            WHERE u.node_id = j.node_id AND u.allocation_id = j.allocation_id
                                              AND u.kind = 'unassign' AND u.state = 'succeeded'
                                              AND u.seq > s.seq))));

-- name: RetentionOverdue :one
-- Rows older than their retention, per table, for `compute check` (a
-- retention of 0 keeps rows forever: none is overdue). Events count
-- whatever holds them back (a sink behind, a pending delivery), except the
-- newest, which is always kept; the outbox has no index on time, so this
-- count reads the whole table. Ended instances count whether or not their
-- node jobs still hold them back.
SELECT
  (SELECT count(*) FROM outbox o
    WHERE sqlc.arg(event_seconds)::float8 > 0
      AND o.time < compute_now() - make_interval(secs => sqlc.arg(event_seconds)::float8)
      AND (o.txid, o.seq) < (SELECT h.txid, h.seq FROM outbox h ORDER BY h.txid DESC, h.seq DESC LIMIT 1))::bigint
    AS events,
  (SELECT count(*) FROM idempotency_keys k WHERE k.expires_at <= compute_now())::bigint AS idempotency_keys,
  (SELECT count(*) FROM webhook_attempts a
    WHERE sqlc.arg(attempt_seconds)::float8 > 0
      AND a.at < compute_now() - make_interval(secs => sqlc.arg(attempt_seconds)::float8))::bigint AS webhook_attempts,
  (SELECT count(*) FROM webhook_deliveries x
    WHERE sqlc.arg(delivery_seconds)::float8 > 0 AND x.state <> 'pending'
      AND x.updated_at < compute_now() - make_interval(secs => sqlc.arg(delivery_seconds)::float8)
      AND (x.state <> 'succeeded' OR NOT EXISTS (SELECT 1 FROM outbox o WHERE o.id = x.event_id)))::bigint
    AS webhook_deliveries,
  (SELECT count(*) FROM instances i
    WHERE sqlc.arg(work_seconds)::float8 > 0 AND i.state IN ('stopped', 'failed', 'succeeded')
      AND i.updated_at < compute_now() - make_interval(secs => sqlc.arg(work_seconds)::float8))::bigint
    AS instances,
  (SELECT count(*) FROM billing_deliveries b
    WHERE sqlc.arg(work_seconds)::float8 > 0
      AND b.delivered_at < compute_now() - make_interval(secs => sqlc.arg(work_seconds)::float8))::bigint
    AS billing_deliveries,
  (SELECT count(*) FROM authz_changes c
    WHERE c.time < compute_now() - make_interval(secs => sqlc.arg(authz_seconds)::float8)
      AND (c.txid, c.seq) < (SELECT h.txid, h.seq FROM authz_changes h ORDER BY h.txid DESC, h.seq DESC LIMIT 1))::bigint
    AS authz_changes,
  (SELECT count(*) FROM stream_tickets s WHERE s.expires_at <= compute_now())::bigint AS stream_tickets,
  (SELECT count(*) FROM node_join_tokens j
    WHERE sqlc.arg(work_seconds)::float8 > 0 AND j.used_at IS NULL
      AND least(j.expires_at, coalesce(j.revoked_at, 'infinity'::timestamptz))
          < compute_now() - make_interval(secs => sqlc.arg(work_seconds)::float8))::bigint
    AS join_tokens,
  (SELECT count(*) FROM rm_fleet_allocations a
    WHERE sqlc.arg(event_seconds)::float8 > 0 AND NOT a.live
      AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.subject = 'reservations/' || a.reservation_id))::bigint
    AS fleet_allocations;

-- name: RetentionOutboxPrunedRecord :exec
-- Records that the log has been pruned (outbox_pruned), in the transaction
-- of a prune batch that deleted events.
INSERT INTO outbox_pruned (singleton, last_at) VALUES (true, compute_now())
ON CONFLICT (singleton) DO UPDATE SET last_at = EXCLUDED.last_at;

-- name: RetentionOutboxPruneLock :exec
-- Taken by each outbox prune batch just before its delete, for the rest of
-- its transaction; every webhook recover shares it before it schedules
-- (RetentionOutboxPruneShare). A recover schedules deliveries of old
-- events, and the prune keeps an event while a delivery of it is pending
-- only if it sees that delivery: one not yet committed it would not, and
-- it would delete the event under it, leaving a delivery pending for ever
-- that can never be sent. Taken first, the delete's snapshot sees every
-- recover that committed; shared, recovers do not wait for each other. A
-- transaction-scoped advisory lock, safe under PgBouncer's transaction
-- pooling.
SELECT pg_advisory_xact_lock(hashtextextended('outbox-prune', 0));

-- name: RetentionOutboxPruneShare :exec
-- A webhook recover's share of RetentionOutboxPruneLock, taken before it
-- reads the events to schedule: no prune batch deletes until it commits.
SELECT pg_advisory_xact_lock_shared(hashtextextended('outbox-prune', 0));

-- name: RetentionStreamTicketsPrune :execrows
-- Deletes expired stream tickets. Issuing a ticket sweeps some expired
-- ones already (StreamTicketDeleteExpired), but only while tickets are
-- issued: the last ones stay until the next issuance, which may never
-- come. An expired ticket redeems nothing (StreamTicketRedeem checks the
-- expiry), so nothing reads it.
DELETE FROM stream_tickets t USING (
  SELECT x.ticket_hash FROM stream_tickets x
   WHERE x.expires_at <= compute_now()
   ORDER BY x.expires_at
   LIMIT sqlc.arg(max_rows)
     FOR UPDATE SKIP LOCKED) e
 WHERE t.ticket_hash = e.ticket_hash;

-- name: RetentionJoinTokensPrune :execrows
-- Deletes node join tokens that were never used and stopped being usable
-- (expired or revoked) before the retention. Such a token joins nothing
-- (NodeJoinTokenCheck, NodeJoinTokenConsume) and a revocation of its
-- issuer skips it (ApiTokenRevokeTree); only a DELETE of it reads it, to
-- answer 204 instead of 404. A used token stays: it records which join
-- issued which node credential (credential_id), one row per join.
DELETE FROM node_join_tokens j USING (
  SELECT x.id FROM node_join_tokens x
   WHERE x.used_at IS NULL
     AND least(x.expires_at, coalesce(x.revoked_at, 'infinity'::timestamptz))
         < compute_now() - make_interval(secs => sqlc.arg(retention_seconds)::float8)
   ORDER BY least(x.expires_at, coalesce(x.revoked_at, 'infinity'::timestamptz))
   LIMIT sqlc.arg(max_rows)
     FOR UPDATE SKIP LOCKED) e
 WHERE j.id = e.id;

-- name: RetentionFleetAllocationsPrune :execrows
-- Deletes the fleet read model's rows of reservations that ended
-- (rm_fleet_allocations, live false) once none of the reservation's events
-- is retained. Every reader of the table reads live rows only (a node's,
-- a pool's and a device's utilization); a row that is no longer live only
-- keeps its version, against an older event of the reservation applied
-- again. Once the log holds none, nothing can be applied again: every
-- sink's cursor has passed them (pruning never passes a sink) and a
-- rebuild replays only what is retained. An ended reservation makes no
-- more transitions, so no newer event comes either; one that did would
-- bring back a row that is not live, which the next run deletes again.
-- The rebuild's seed (RmFleetAllocationSeed) skips such reservations by
-- the same rule. Found through rm_fleet_allocations_ended.
DELETE FROM rm_fleet_allocations a USING (
  SELECT x.reservation_id FROM rm_fleet_allocations x
   WHERE NOT x.live
     AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.subject = 'reservations/' || x.reservation_id)
   ORDER BY x.reservation_id
   LIMIT sqlc.arg(max_rows)
     FOR UPDATE SKIP LOCKED) e
 WHERE a.reservation_id = e.reservation_id AND NOT a.live;
