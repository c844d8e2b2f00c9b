CREATE INDEX vnf_instances_state ON vnf_instances (instantiation_state, seq);
