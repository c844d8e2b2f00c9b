DROP INDEX vnf_instances_vim_connection_info;
CREATE INDEX vnf_instances_vim_connection_info ON vnf_instances USING gin (vim_connection_info jsonb_path_ops);
DROP INDEX vnf_instances_extensions;
CREATE INDEX vnf_instances_extensions ON vnf_instances USING gin (extensions jsonb_path_ops);
DROP INDEX vnf_instances_vcp;
CREATE INDEX vnf_instances_vcp ON vnf_instances USING gin (vnf_configurable_properties jsonb_path_ops);
DROP INDEX vnf_instances_metadata;
CREATE INDEX vnf_instances_metadata ON vnf_instances USING gin (metadata jsonb_path_ops);
