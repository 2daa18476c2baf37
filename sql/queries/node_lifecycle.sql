-- name: NodeLiveReservationIDs :many
-- Reservations holding a live allocation on the node: what nodes.release
-- gives back and what blocks nodes.retire.
SELECT DISTINCT reservation_id FROM allocations
 WHERE node_id = sqlc.arg(node_id) AND released_at IS NULL
 ORDER BY reservation_id;
