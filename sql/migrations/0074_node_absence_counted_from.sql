-- +goose Up
-- +goose StatementBegin
-- The one definition of when a node's absence starts to count: from the
-- later of unreachable_since and the end of the last control-plane outage
-- (node_liveness_sweeps.outage_ended_at, 0073), since a daemon cannot
-- reconnect while the control plane is down, so that time says nothing about
-- the node. The unreachable → lost transition (NodeLivenessDue,
-- NodeLivenessLostDue) and the node job timeout (NodeJobTimeoutDue,
-- NodeJobTimeoutAbsence) both count from here (docs/concepts/nodes.md).
-- NULL when unreachable_since is NULL: a node that is not away has no
-- absence, whatever the outages.
--
-- A table function used in FROM (CROSS JOIN LATERAL), not a scalar one:
-- PostgreSQL inlines a scalar SQL function only when its body reads no table
-- and has no subquery, so a scalar version would run as a query of its own
-- for every unreachable node the liveness sweep looks at (measured with
-- 5,000 nodes, 2,000 of them unreachable: the sweep's NodeLivenessDue took
-- about twice as long). A single-SELECT, non-STRICT, STABLE, SET-less SQL
-- function returning a set is inlined into the calling query instead: the
-- sweep's plan is the one it had with the expression written out (one
-- InitPlan reads the sweep row).
-- Keep it that way: STRICT, VOLATILE, SECURITY DEFINER or a SET clause would
-- stop the inlining. It always returns exactly one row.
CREATE FUNCTION node_absence_counted_from(unreachable_since timestamptz)
  RETURNS TABLE (counted_from timestamptz)
  LANGUAGE sql STABLE ROWS 1
AS $$
  SELECT CASE WHEN unreachable_since IS NOT NULL
              THEN GREATEST(unreachable_since,
                            (SELECT w.outage_ended_at FROM node_liveness_sweeps w WHERE w.id = 1))
         END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION node_absence_counted_from(timestamptz);
