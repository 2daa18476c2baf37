-- name: StreamTicketCreate :one
-- Issues a ticket for a token, valid for ttl_seconds of business time.
INSERT INTO stream_tickets (ticket_hash, token_id, tenant_id, identity, role, expires_at)
VALUES (sqlc.arg(ticket_hash), sqlc.arg(token_id), sqlc.arg(tenant_id), sqlc.arg(identity), sqlc.arg(role),
        compute_now() + make_interval(secs => sqlc.arg(ttl_seconds)::float8))
RETURNING expires_at;

-- name: StreamTicketRedeem :one
-- Redeems a ticket: deletes it and returns what it is bound to, if it has
-- not expired and its token is neither revoked nor expired. Zero rows
-- (unknown, used, expired or revoked) is all the caller learns. The delete
-- makes it single use: of two concurrent redemptions, the second finds no
-- row. A ticket of a suspended tenant is used up too, and comes back with
-- the suspension's reason, which the caller answers with (TENANT_SUSPENDED)
-- as it answers every other request of the tenant. The token's expiry and
-- the business time of the redemption come back too, so that the stream
-- the ticket opens ends when its token expires, on a process that never
-- looked the token up.
DELETE FROM stream_tickets t
 USING api_tokens k
 WHERE t.ticket_hash = sqlc.arg(ticket_hash)
   AND t.expires_at > compute_now()
   AND k.id = t.token_id AND k.revoked_at IS NULL
   AND (k.expires_at IS NULL OR k.expires_at > compute_now())
RETURNING t.token_id, t.tenant_id, t.identity, t.role,
          (SELECT e.expires_at FROM api_tokens e WHERE e.id = t.token_id) AS token_expires_at,
          (SELECT n.suspended_reason FROM tenants n WHERE n.id = t.tenant_id) AS suspended_reason,
          compute_now()::timestamptz AS db_now;

-- name: StreamTicketDeleteExpired :execrows
-- Deletes up to max_rows expired tickets (redeemed ones are gone already).
DELETE FROM stream_tickets
 WHERE ticket_hash IN (SELECT ticket_hash FROM stream_tickets
                        WHERE expires_at <= compute_now()
                        ORDER BY expires_at LIMIT sqlc.arg(max_rows));
