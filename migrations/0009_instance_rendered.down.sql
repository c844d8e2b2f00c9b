DROP TRIGGER vnf_instances_rendered_stale ON vnf_instances;
DROP FUNCTION vnf_instances_rendered_stale();
ALTER TABLE vnf_instances DROP COLUMN rendered_doc, DROP COLUMN rendered_version, DROP COLUMN rendered_rev;
