-- name: SimClockUse :exec
SELECT compute_use_sim_clock(sqlc.arg(enabled)::boolean);

-- name: SimClockSet :exec
UPDATE compute_sim_clock SET ts = sqlc.arg(ts) WHERE id = 1;

-- name: SimClockAdvance :one
UPDATE compute_sim_clock SET ts = ts + make_interval(secs => sqlc.arg(seconds)::float8) WHERE id = 1 RETURNING ts;

-- name: ClockNow :one
SELECT compute_now()::timestamptz AS now;
