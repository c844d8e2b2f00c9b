DROP VIEW IF EXISTS vnf_lcm_op_occs_doc;
DROP VIEW IF EXISTS vnf_instances_doc;
DROP TABLE IF EXISTS op_journal;
DROP TABLE IF EXISTS vnf_lcm_op_occs;
DROP TABLE IF EXISTS vnf_instances;
DROP TABLE IF EXISTS vnf_packages;
