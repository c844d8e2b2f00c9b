-- LCM notification subscriptions and the notification outbox. Outbox rows are
-- written in the transaction that changes state; a subscription's deliveries
-- are leased as a whole so they go out one at a time, in order.
CREATE TABLE subscriptions (
    id             uuid PRIMARY KEY,
    seq            bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    callback_uri   text NOT NULL,
    filter         jsonb,
    filter_canon   text NOT NULL,
    authentication jsonb, -- credentials sealed; never rendered
    delivery_owner text,
    delivery_until timestamptz,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX subscriptions_unique ON subscriptions (callback_uri, filter_canon);
CREATE INDEX subscriptions_id_text ON subscriptions ((id::text));

CREATE TABLE notification_outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    notification_id uuid NOT NULL,
    subscription_id uuid NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    event           jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    attempts        int NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    delivered_at    timestamptz,
    failed_at       timestamptz -- given up after the retry period; kept for inspection
);
CREATE INDEX notification_outbox_pending ON notification_outbox (subscription_id, id) WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE INDEX notification_outbox_delivered ON notification_outbox (delivered_at) WHERE delivered_at IS NOT NULL;

CREATE VIEW subscriptions_doc AS
SELECT s.*, jsonb_strip_nulls(jsonb_build_object(
    'id', s.id::text, 'callbackUri', s.callback_uri, 'filter', s.filter)) AS doc
FROM subscriptions s;
