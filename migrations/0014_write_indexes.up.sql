-- Every index of a table takes an entry at each INSERT and at each update
-- that is not HOT; an op row is inserted and then updated twice without HOT
-- (claim and finish change its state, which indexes refer to), so each of
-- its indexes costs three entries per operation. These are the ones no
-- query needs in this form (internal/store/list.go says how each filter is
-- answered; docs/architecture.md, "Lists and their indexes").

-- An id filter (eq/neq/in/nin) compares the uuid column when its value is a
-- uuid as PostgreSQL writes it and matches nothing otherwise (store.uuidCond):
-- the primary key and (vnf_instance_id, seq) answer it. cont and the
-- orderings compare the text without an index, as before.
DROP INDEX vnf_instances_id_text;
DROP INDEX vnf_lcm_op_occs_id_text;
DROP INDEX vnf_lcm_op_occs_instance_text;
DROP INDEX vnf_packages_id_text;
DROP INDEX subscriptions_id_text;

-- A state filter finds the unfinished states through the partial indexes
-- that the claim and the one-operation rule keep (runnable, one_active:
-- `operation_state = 'PROCESSING'` implies their predicates), COMPLETED (most
-- rows) in seq order; only the rare final states need an index of their own,
-- which a row enters once, when it ends FAILED or ROLLED_BACK. It is
-- (state, seq) so that a page is read in keyset order.
DROP INDEX vnf_lcm_op_occs_state;
CREATE INDEX vnf_lcm_op_occs_state ON vnf_lcm_op_occs (operation_state, seq)
    WHERE operation_state IN ('FAILED', 'ROLLED_BACK');

-- An operation filter reads a page in keyset order (the column alone made
-- the planner read every matching row and sort them).
DROP INDEX vnf_lcm_op_occs_operation;
CREATE INDEX vnf_lcm_op_occs_operation ON vnf_lcm_op_occs (operation, seq);
