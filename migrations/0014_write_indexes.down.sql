DROP INDEX vnf_lcm_op_occs_operation;
CREATE INDEX vnf_lcm_op_occs_operation ON vnf_lcm_op_occs (operation);
DROP INDEX vnf_lcm_op_occs_state;
CREATE INDEX vnf_lcm_op_occs_state ON vnf_lcm_op_occs (operation_state);
CREATE INDEX subscriptions_id_text ON subscriptions ((id::text));
CREATE INDEX vnf_packages_id_text ON vnf_packages ((id::text));
CREATE INDEX vnf_lcm_op_occs_instance_text ON vnf_lcm_op_occs ((vnf_instance_id::text));
CREATE INDEX vnf_lcm_op_occs_id_text ON vnf_lcm_op_occs ((id::text));
CREATE INDEX vnf_instances_id_text ON vnf_instances ((id::text));
