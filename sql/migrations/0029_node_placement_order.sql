-- +goose Up
-- The placer scores a sample of a pool's or a site's nodes (commands,
-- DefaultPlacementSample). The sample used to be the first nodes in an order
-- hashed from the reservation id, which sorted every node of the scope: a
-- site-wide request over 10,000 nodes spent ~4 ms sorting before it counted a
-- single free atom. Now every node has a fixed place in the order
-- hashtext(id), and a request takes the nodes that follow a point hashed from
-- its id, wrapping around: an index range scan that reads the sample and no
-- more, whatever the size of the fleet. Requests still start at different
-- points, so concurrent placers spread over the fleet as before.
--
-- A site-wide sample needs the site on the node row. nodes.site_id copies
-- its pool's site, and the foreign key (pool_id, site_id) to pools keeps the
-- copy right: a node cannot name a site its pool is not in.
ALTER TABLE pools ADD CONSTRAINT pools_id_site UNIQUE (id, site_id);
ALTER TABLE nodes ADD COLUMN site_id text;
UPDATE nodes n SET site_id = p.site_id FROM pools p WHERE p.id = n.pool_id;
ALTER TABLE nodes ALTER COLUMN site_id SET NOT NULL;
ALTER TABLE nodes ADD CONSTRAINT nodes_pool_site FOREIGN KEY (pool_id, site_id) REFERENCES pools (id, site_id);
CREATE INDEX nodes_pool_place ON nodes (pool_id, hashtext(id), id);
CREATE INDEX nodes_site_place ON nodes (site_id, hashtext(id), id);

-- +goose Down
DROP INDEX nodes_site_place;
DROP INDEX nodes_pool_place;
ALTER TABLE nodes DROP CONSTRAINT nodes_pool_site;
ALTER TABLE nodes DROP COLUMN site_id;
ALTER TABLE pools DROP CONSTRAINT pools_id_site;
