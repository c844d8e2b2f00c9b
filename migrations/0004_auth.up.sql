-- OAuth 2.0 client credentials (SOL013): registered clients with the SHA-256
-- of their generated 256-bit secret, and the access tokens issued to them,
-- stored as the SHA-256 of the opaque token. A token row is all any replica
-- needs to accept the token; deleting a client deletes its tokens.
CREATE TABLE auth_clients (
    id            text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9._-]{1,64}$'),
    secret_sha256 bytea NOT NULL CHECK (length(secret_sha256) = 32),
    scopes        text[] NOT NULL CHECK (cardinality(scopes) > 0),
    description   text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE auth_tokens (
    token_sha256 bytea PRIMARY KEY CHECK (length(token_sha256) = 32),
    client_id    text NOT NULL REFERENCES auth_clients (id) ON DELETE CASCADE,
    scopes       text[] NOT NULL,
    issued_at    timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX auth_tokens_client_id ON auth_tokens (client_id);
CREATE INDEX auth_tokens_expires_at ON auth_tokens (expires_at);
