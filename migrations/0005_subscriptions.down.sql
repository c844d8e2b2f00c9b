DROP VIEW IF EXISTS subscriptions_doc;
DROP TABLE IF EXISTS notification_outbox;
DROP TABLE IF EXISTS subscriptions;
