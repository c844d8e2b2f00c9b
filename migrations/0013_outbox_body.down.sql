-- A notification queued with only its body (this build) gets the event the
-- older build renders, made of the body: the rendering says what the body
-- says (the body is masked; masking it again changes nothing). Of the
-- instance, the event needs only its id: its other attributes served the
-- fan-out's filters, which chose the row's subscription when it was queued.
-- Members are added only when the body has them (a null inside changedInfo
-- stays a null).
UPDATE notification_outbox o SET event = jsonb_build_object(
    'Type', b->>'notificationType',
    'Instance', jsonb_build_object('ID', b->>'vnfInstanceId'),
    'OpOccID', COALESCE(b->>'vnfLcmOpOccId', ''),
    'Operation', COALESCE(b->>'operation', ''),
    'OperationState', COALESCE(b->>'operationState', ''),
    'IsAutomaticInvocation', COALESCE((b->'isAutomaticInvocation')::boolean, false),
    'Op', CASE WHEN b->>'notificationStatus' = 'RESULT' THEN
        CASE WHEN b ?| ARRAY['affectedVnfcs', 'affectedVirtualLinks', 'affectedVirtualStorages']
             THEN jsonb_build_object('resourceChanges',
                  CASE WHEN b ? 'affectedVnfcs' THEN jsonb_build_object('affectedVnfcs', b->'affectedVnfcs') ELSE '{}' END
                  || CASE WHEN b ? 'affectedVirtualLinks' THEN jsonb_build_object('affectedVirtualLinks', b->'affectedVirtualLinks') ELSE '{}' END
                  || CASE WHEN b ? 'affectedVirtualStorages' THEN jsonb_build_object('affectedVirtualStorages', b->'affectedVirtualStorages') ELSE '{}' END)
             ELSE '{}' END
        || CASE WHEN b ? 'changedInfo' THEN jsonb_build_object('changedInfo', b->'changedInfo') ELSE '{}' END
        || CASE WHEN b ? 'changedExtConnectivity' THEN jsonb_build_object('changedExtConnectivity', b->'changedExtConnectivity') ELSE '{}' END
        || CASE WHEN b ? 'error' THEN jsonb_build_object('error', b->'error') ELSE '{}' END
    END)
FROM (SELECT id, body::jsonb AS b FROM notification_outbox WHERE event IS NULL) s
WHERE o.id = s.id;
ALTER TABLE notification_outbox DROP CONSTRAINT notification_outbox_body_or_event, DROP COLUMN body,
    ALTER COLUMN event SET NOT NULL;
