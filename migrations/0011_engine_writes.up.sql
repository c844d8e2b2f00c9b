-- A later operation of an instance starts from the management drivers'
-- parameters of its last completed instantiation (store.InstantiationParams).
-- A row enters this index once, when an instantiation completes, and a
-- completed operation is never updated again: one probe finds it, however
-- many operations the instance has had. (Without it the planner combined
-- the operation and state indexes and read every completed instantiation of
-- every instance.)
CREATE INDEX vnf_lcm_op_occs_instantiated ON vnf_lcm_op_occs (vnf_instance_id, seq)
    WHERE operation = 'INSTANTIATE' AND operation_state = 'COMPLETED';

-- The engine updates a running operation's row at every step (its working
-- copy, internal/lcm/commit.go): room on the page lets the new version stay
-- there (a HOT update: no index entries) instead of adding an entry to each of
-- the table's indexes, which the claim then has to step over.
ALTER TABLE vnf_lcm_op_occs SET (fillfactor = 50);
