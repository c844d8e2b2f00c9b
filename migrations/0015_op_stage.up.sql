-- An update is HOT (no index entries) only when no column that an index
-- refers to changes, predicates of partial indexes included. The start of
-- an operation (STARTING → PROCESSING: the claim, or the first write of an
-- operation run where it was accepted) changed operation_state, which the
-- one-active, runnable, instantiated and state indexes named: never HOT.
-- They name its stage instead, which that change leaves as it is: 'run'
-- (STARTING, PROCESSING, ROLLING_BACK: the engine's to run), 'held'
-- (FAILED_TEMP: waiting for retry, rollback or fail), else the final state.
-- No index may refer to operation_state itself. Queries that want these
-- indexes say stage (store: activeStages, the claim, InstantiationParams; a
-- state filter adds the stage its values imply). Adding the column
-- rewrites the table.
ALTER TABLE vnf_lcm_op_occs ADD COLUMN stage text NOT NULL GENERATED ALWAYS AS (
    CASE WHEN operation_state IN ('STARTING', 'PROCESSING', 'ROLLING_BACK') THEN 'run'
         WHEN operation_state = 'FAILED_TEMP' THEN 'held'
         ELSE operation_state END) STORED;

-- The listing view selects o.*: create it again so that it has the column.
DROP VIEW vnf_lcm_op_occs_doc;
CREATE VIEW vnf_lcm_op_occs_doc AS
SELECT o.*, jsonb_strip_nulls(jsonb_build_object(
    'id', o.id::text,
    'operationState', o.operation_state,
    'stateEnteredTime', to_char(o.state_entered_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'startTime', to_char(o.start_time AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'vnfInstanceId', o.vnf_instance_id::text,
    'grantId', o.grant_id,
    'operation', o.operation,
    'isAutomaticInvocation', o.is_automatic_invocation,
    'operationParams', o.operation_params,
    'isCancelPending', o.is_cancel_pending,
    'cancelMode', o.cancel_mode,
    'error', o.error,
    'resourceChanges', o.resource_changes,
    'changedInfo', o.changed_info,
    'changedExtConnectivity', o.changed_ext_connectivity)) AS doc
FROM vnf_lcm_op_occs o;

DROP INDEX vnf_lcm_op_occs_one_active;
CREATE UNIQUE INDEX vnf_lcm_op_occs_one_active ON vnf_lcm_op_occs (vnf_instance_id) WHERE stage IN ('run', 'held');
DROP INDEX vnf_lcm_op_occs_runnable;
CREATE INDEX vnf_lcm_op_occs_runnable ON vnf_lcm_op_occs (seq) WHERE stage = 'run';
DROP INDEX vnf_lcm_op_occs_instantiated;
CREATE INDEX vnf_lcm_op_occs_instantiated ON vnf_lcm_op_occs (vnf_instance_id, seq)
    WHERE operation = 'INSTANTIATE' AND stage = 'COMPLETED';
DROP INDEX vnf_lcm_op_occs_state;
CREATE INDEX vnf_lcm_op_occs_state ON vnf_lcm_op_occs (stage, seq) WHERE stage IN ('FAILED', 'ROLLED_BACK');
