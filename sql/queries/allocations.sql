-- name: AllocationCreate :exec
INSERT INTO allocations (id, reservation_id, node_id, device_ids, vcpu, memory, disk)
VALUES (sqlc.arg(id), sqlc.arg(reservation_id), sqlc.arg(node_id), sqlc.arg(device_ids)::text[],
        sqlc.arg(vcpu), sqlc.arg(memory), sqlc.arg(disk));

-- name: AllocationListLive :many
SELECT a.id, a.reservation_id, a.node_id, n.pool_id, a.device_ids, a.vcpu, a.memory, a.disk
  FROM allocations a JOIN nodes n ON n.id = a.node_id
 WHERE a.reservation_id = sqlc.arg(reservation_id) AND a.released_at IS NULL ORDER BY a.id;

-- name: AllocationRelease :execrows
UPDATE allocations SET released_at = compute_now() WHERE id = sqlc.arg(id) AND released_at IS NULL;
