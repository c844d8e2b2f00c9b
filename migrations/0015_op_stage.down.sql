DROP INDEX vnf_lcm_op_occs_state;
CREATE INDEX vnf_lcm_op_occs_state ON vnf_lcm_op_occs (operation_state, seq)
    WHERE operation_state IN ('FAILED', 'ROLLED_BACK');
DROP INDEX vnf_lcm_op_occs_instantiated;
CREATE INDEX vnf_lcm_op_occs_instantiated ON vnf_lcm_op_occs (vnf_instance_id, seq)
    WHERE operation = 'INSTANTIATE' AND operation_state = 'COMPLETED';
DROP INDEX vnf_lcm_op_occs_runnable;
CREATE INDEX vnf_lcm_op_occs_runnable ON vnf_lcm_op_occs (seq)
    WHERE operation_state IN ('STARTING','PROCESSING','ROLLING_BACK');
DROP INDEX vnf_lcm_op_occs_one_active;
CREATE UNIQUE INDEX vnf_lcm_op_occs_one_active ON vnf_lcm_op_occs (vnf_instance_id)
    WHERE operation_state IN ('STARTING','PROCESSING','FAILED_TEMP','ROLLING_BACK');
DROP VIEW vnf_lcm_op_occs_doc;
ALTER TABLE vnf_lcm_op_occs DROP COLUMN stage;
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
