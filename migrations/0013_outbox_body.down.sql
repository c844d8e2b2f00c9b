-- The notifications queued with only a body cannot be sent by the older
-- build: they are dropped.
DELETE FROM notification_outbox WHERE event IS NULL;
ALTER TABLE notification_outbox DROP CONSTRAINT notification_outbox_body_or_event, DROP COLUMN body,
    ALTER COLUMN event SET NOT NULL;
