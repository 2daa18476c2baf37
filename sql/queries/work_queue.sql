-- name: WorkQueueEnqueue :exec
-- Enqueued in the caller's transaction. Dirtying a queued key bumps gen and
-- keeps the earlier due time, so a wake-up is never lost nor postponed.
-- A key that is queued, not claimed and due no later than asked already
-- says all this wake-up would: the row is only locked (until the caller
-- commits, so no claim can start meanwhile), not rewritten. A claimed key
-- is always dirtied, so that the run in progress does not delete it
-- (WorkQueueComplete). This matters for keys woken far more often than
-- they run (a node's dispatch, a scope's waiting line): each rewrite
-- would leave a dead row version and new index entries behind.
INSERT INTO work_queue AS w (kind, key, shard, gen, not_before)
VALUES (sqlc.arg(kind), sqlc.arg(key), sqlc.arg(shard), 1,
        compute_now() + make_interval(secs => sqlc.arg(delay_seconds)::float8))
ON CONFLICT (kind, key) DO UPDATE
   SET gen = w.gen + 1,
       not_before = LEAST(w.not_before, EXCLUDED.not_before)
 WHERE w.claimed_by IS NOT NULL OR EXCLUDED.not_before < w.not_before;

-- name: WorkQueueEnqueueMany :exec
-- WorkQueueEnqueue for many wake-ups in one statement (kinds, keys, their
-- shards and delays as parallel arrays), with the same semantics: a new key
-- gets gen 1, a queued one has its gen bumped and keeps the earlier due
-- time (and is only locked when that changes nothing). A kind and key repeated in the arrays is enqueued once, at its
-- earliest delay.
INSERT INTO work_queue AS w (kind, key, shard, gen, not_before)
SELECT DISTINCT ON (k.kind, k.key) k.kind, k.key, k.shard, 1,
       compute_now() + make_interval(secs => k.delay_seconds)
  FROM (SELECT unnest(sqlc.arg(kinds)::text[]) AS kind, unnest(sqlc.arg(keys)::text[]) AS key,
               unnest(sqlc.arg(shards)::int[]) AS shard, unnest(sqlc.arg(delays_seconds)::float8[]) AS delay_seconds) k
 ORDER BY k.kind, k.key, k.delay_seconds
ON CONFLICT (kind, key) DO UPDATE
   SET gen = w.gen + 1,
       not_before = LEAST(w.not_before, EXCLUDED.not_before)
 WHERE w.claimed_by IS NOT NULL OR EXCLUDED.not_before < w.not_before;

-- name: WorkQueueClaim :many
-- Claims due rows of the caller's shards. SKIP LOCKED lets many workers claim
-- side by side. A row claimed by another owner is taken over at once: the
-- caller holds the row's shard lease, so that owner lost it (crashed, or a
-- zombie whose completion the lease fences) and waiting for its
-- claimed_until would only delay the work. claimed_until still guards the
-- caller's own claims. The caller's lease on each shard must still be live:
-- a worker that renews its leases only now and then (Worker.Run) never
-- claims under one that lapsed meanwhile.
--
-- The oldest due rows, however many are due: the candidates are the first
-- max_rows of each (shard, kind) pair in not_before order, read from
-- work_queue_due_by_kind, and of those the oldest max_rows are locked and
-- claimed. A claim's cost follows max_rows and the shards and kinds, never
-- the backlog: sorting every due row of the shards took 270 ms with 560,000
-- webhook deliveries due, and the delivery pool, which claims as each slot
-- frees, then delivered about 7 a second for every tenant.
UPDATE work_queue w
   SET claimed_until = compute_now() + make_interval(secs => sqlc.arg(claim_seconds)::float8),
       claimed_by = sqlc.arg(claimer)::text,
       attempts = w.attempts + 1
  FROM (SELECT q.kind, q.key FROM work_queue q
         WHERE (q.kind, q.key) IN (
                 SELECT c.kind, c.key
                   FROM unnest(ARRAY(SELECT s FROM unnest(sqlc.arg(shards)::int[]) AS s
                                       JOIN leases l ON l.name = 'shard:' || s
                                      WHERE l.owner = sqlc.arg(claimer)::text AND l.expires_at > compute_now())) AS sh (shard)
                  CROSS JOIN unnest(sqlc.arg(kinds)::text[]) AS k (kind)
                  CROSS JOIN LATERAL (
                        SELECT c.kind, c.key, c.not_before FROM work_queue c
                         WHERE c.kind = k.kind AND c.shard = sh.shard
                           AND c.not_before <= compute_now()
                           AND (c.claimed_until IS NULL OR c.claimed_until <= compute_now()
                                OR c.claimed_by IS DISTINCT FROM sqlc.arg(claimer)::text)
                         ORDER BY c.not_before
                         LIMIT sqlc.arg(max_rows)) c
                  ORDER BY c.not_before
                  LIMIT sqlc.arg(max_rows))
           AND q.not_before <= compute_now()
           AND (q.claimed_until IS NULL OR q.claimed_until <= compute_now()
                OR q.claimed_by IS DISTINCT FROM sqlc.arg(claimer)::text)
         ORDER BY q.not_before
         FOR UPDATE SKIP LOCKED) due
 WHERE w.kind = due.kind AND w.key = due.key
RETURNING w.kind, w.key, w.shard, w.gen, w.attempts;

-- name: WorkQueueComplete :execrows
-- Deletes a finished row only if nobody dirtied it during the run.
DELETE FROM work_queue WHERE kind = sqlc.arg(kind) AND key = sqlc.arg(key) AND gen = sqlc.arg(gen);

-- name: WorkQueueReschedule :execrows
-- Releases a claim and sets when the key runs next: after a failure (with a
-- back-off delay) or when the handler asked to run again later. A key
-- dirtied during the run (gen moved past the claimed one) keeps the due
-- time its enqueue set, as WorkQueueUnclaim does: a fresh wake-up is never
-- pushed back by the run it arrived during.
UPDATE work_queue
   SET claimed_until = NULL, claimed_by = NULL,
       not_before = CASE WHEN gen = sqlc.arg(gen)
                         THEN compute_now() + make_interval(secs => sqlc.arg(delay_seconds)::float8)
                         ELSE LEAST(not_before, compute_now() + make_interval(secs => sqlc.arg(delay_seconds)::float8))
                    END,
       last_error = sqlc.narg(last_error)
 WHERE kind = sqlc.arg(kind) AND key = sqlc.arg(key);

-- name: WorkQueueExtendClaims :execrows
-- Keeps the claims of the items a worker is still running, at each renewal
-- of its shard leases, so that a run longer than the claim TTL is not
-- claimed and run a second time by its own worker. Claims another owner
-- took over are left alone.
UPDATE work_queue
   SET claimed_until = compute_now() + make_interval(secs => sqlc.arg(claim_seconds)::float8)
 WHERE (kind, key) IN (SELECT unnest(sqlc.arg(kinds)::text[]), unnest(sqlc.arg(keys)::text[]))
   AND claimed_by = sqlc.arg(claimer)::text;

-- name: WorkQueueUnclaim :execrows
-- Releases the claim of a run whose key was dirtied meanwhile; the due time
-- the dirtying transaction set stands, so the key runs again.
UPDATE work_queue SET claimed_until = NULL, claimed_by = NULL
 WHERE kind = sqlc.arg(kind) AND key = sqlc.arg(key);

-- name: WorkQueueGet :one
SELECT kind, key, shard, gen, not_before, claimed_until, claimed_by, attempts, last_error
  FROM work_queue WHERE kind = sqlc.arg(kind) AND key = sqlc.arg(key);
