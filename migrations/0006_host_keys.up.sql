-- SSH host keys pinned per VNFC (internal/remote PinStore, internal/store
-- hostkeys.go): the first verified contact with a server at an address pins
-- the key it offered; every later contact must offer the same key. A server
-- may have one pin per key type. Heal/rebuild replaces the pins.
CREATE TABLE host_keys (
    server_id   text NOT NULL CHECK (server_id <> ''),
    address     text NOT NULL CHECK (address <> ''),
    key_type    text NOT NULL CHECK (key_type <> ''),
    fingerprint text NOT NULL CHECK (fingerprint LIKE 'SHA256:%'),
    public_key  bytea NOT NULL,  -- SSH wire format
    first_seen  timestamptz NOT NULL DEFAULT now(),
    last_seen   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (server_id, address, key_type)
);
CREATE INDEX host_keys_address ON host_keys (address);
