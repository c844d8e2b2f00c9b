ALTER TABLE vnf_lcm_op_occs RESET (fillfactor);
DROP INDEX vnf_lcm_op_occs_instantiated;
