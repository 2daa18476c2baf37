-- +goose Up
-- answered says whether the endpoint has ever answered an attempt with a
-- 2xx. Until it has, a delivery counts as a suspect one for the process's
-- delivery pool, like one of an endpoint whose last attempt failed: at
-- most half of the pool's goroutines (COMPUTE_WEBHOOK_CONCURRENCY) hold
-- such requests at once. Before, an endpoint that had not failed yet
-- counted as answering, so new endpoints that hang took the whole tenant
-- cap (8) each until their first timeout: five tenants with 20 of them
-- filled a process's 32 delivery goroutines, and another tenant's
-- deliveries waited 23 to 32 s (median) for about two minutes.
--
-- Endpoints that exist already count as answered (the default at the
-- ADD is true, and PostgreSQL stores it without rewriting the table):
-- they are treated as before. New ones start unanswered.
ALTER TABLE webhook_endpoints ADD COLUMN answered boolean NOT NULL DEFAULT true;
ALTER TABLE webhook_endpoints ALTER COLUMN answered SET DEFAULT false;

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN answered;
