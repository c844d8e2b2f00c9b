DROP VIEW vnf_lcm_op_occs_doc;
ALTER TABLE vnf_lcm_op_occs ALTER COLUMN work TYPE jsonb USING work::jsonb;
DO $$
BEGIN
    ALTER TABLE vnf_lcm_op_occs ALTER COLUMN work SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this server has no lz4: the working copies stay pglz-compressed';
END $$;
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
