-- A queued notification keeps what it says (lccn.Body: the notification
-- without _links, subscriptionId and timeStamp, rendered and masked when the
-- event is queued), as text: a notifier sends it without decoding it, and
-- PostgreSQL stores it without parsing it. Rows queued before keep their
-- event and are rendered from it.
ALTER TABLE notification_outbox ADD COLUMN body text, ALTER COLUMN event DROP NOT NULL,
    ADD CONSTRAINT notification_outbox_body_or_event CHECK (body IS NOT NULL OR event IS NOT NULL);
