-- The GIN indexes on the instances' JSON documents hold only the rows that
-- have the document: a row without one (most instances have no metadata,
-- configurable properties or extensions, and none has a VIM before its
-- first instantiation) added a null entry to each of them at every update
-- that is not HOT (instantiate and terminate change indexed columns, so
-- every one of theirs). The filters test the column with a strict operator
-- (`col @? path`, `col @> value`), which implies `col IS NOT NULL`: they use
-- these indexes as before.
DROP INDEX vnf_instances_metadata;
CREATE INDEX vnf_instances_metadata ON vnf_instances USING gin (metadata jsonb_path_ops) WHERE metadata IS NOT NULL;
DROP INDEX vnf_instances_vcp;
CREATE INDEX vnf_instances_vcp ON vnf_instances USING gin (vnf_configurable_properties jsonb_path_ops)
    WHERE vnf_configurable_properties IS NOT NULL;
DROP INDEX vnf_instances_extensions;
CREATE INDEX vnf_instances_extensions ON vnf_instances USING gin (extensions jsonb_path_ops) WHERE extensions IS NOT NULL;
DROP INDEX vnf_instances_vim_connection_info;
CREATE INDEX vnf_instances_vim_connection_info ON vnf_instances USING gin (vim_connection_info jsonb_path_ops)
    WHERE vim_connection_info IS NOT NULL;
