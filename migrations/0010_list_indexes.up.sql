-- Lists page by seq (keyset: seq > marker ORDER BY seq LIMIT n). An equality
-- filter on a column is served by an index on (column, seq): a page reads its
-- own rows in order however many rows match, so the indexes on the column
-- alone become (column, seq).
DROP INDEX vnf_instances_name;
CREATE INDEX vnf_instances_name ON vnf_instances (vnf_instance_name, seq);
DROP INDEX vnf_instances_vnfd_id;
CREATE INDEX vnf_instances_vnfd_id ON vnf_instances (vnfd_id, seq);
DROP INDEX vnf_instances_state;
CREATE INDEX vnf_instances_state ON vnf_instances (instantiation_state, seq);
DROP INDEX vnf_instances_provider;
CREATE INDEX vnf_instances_provider ON vnf_instances (vnf_provider, seq);
CREATE INDEX vnf_instances_product ON vnf_instances (vnf_product_name, seq);

-- Filters on paths inside the documents a client writes (metadata,
-- vnfConfigurableProperties, extensions) add a jsonpath test on the column
-- (sol013 JSONColumns) that these indexes answer, so a value few instances
-- have is found without reading the others. The engine's documents
-- (instantiatedVnfInfo, vimConnectionInfo) change with every operation and
-- are not indexed: filters on them read the rows in seq order.
CREATE INDEX vnf_instances_metadata ON vnf_instances USING gin (metadata jsonb_path_ops);
CREATE INDEX vnf_instances_vcp ON vnf_instances USING gin (vnf_configurable_properties jsonb_path_ops);
CREATE INDEX vnf_instances_extensions ON vnf_instances USING gin (extensions jsonb_path_ops);
