-- The management drivers' parameters of an operation, parsed once when the
-- request was accepted (internal/lcm accept, mgmtdrivers.Typed.ParseParams):
-- {driver name: parameters}, secrets sealed. The engine hands them to every
-- hook typed; a later operation of the instance starts from those of its
-- last completed instantiation.
ALTER TABLE vnf_lcm_op_occs ADD COLUMN driver_params jsonb;

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
