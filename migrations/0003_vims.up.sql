-- VIM registry (Tacker's legacy /v1.0/vims): one row per VIM and its
-- credentials in vim_auths, whose auth_cred values are sealed (AES-256-GCM,
-- internal/secrets) with the key named in key_id.
CREATE TABLE vims (
    id             uuid PRIMARY KEY,
    seq            bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    name           text NOT NULL CHECK (name <> ''),
    description    text NOT NULL DEFAULT '',
    tenant_id      text NOT NULL DEFAULT '',
    type           text NOT NULL CHECK (type IN ('openstack', 'kubernetes')),
    auth_url       text NOT NULL,
    vim_project    jsonb NOT NULL DEFAULT '{}',
    placement_attr jsonb NOT NULL DEFAULT '{}',
    shared         boolean NOT NULL DEFAULT false,
    is_default     boolean NOT NULL DEFAULT false,
    status         text NOT NULL,
    extra          jsonb NOT NULL DEFAULT '{}', -- secret-named keys sealed
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX vims_name ON vims (name);
-- At most one default VIM.
CREATE UNIQUE INDEX vims_one_default ON vims (is_default) WHERE is_default;

CREATE TABLE vim_auths (
    vim_id      uuid PRIMARY KEY REFERENCES vims (id) ON DELETE CASCADE,
    auth_url    text NOT NULL,
    vim_project jsonb NOT NULL DEFAULT '{}',
    auth_cred   jsonb NOT NULL,  -- every value except plain identifiers sealed
    key_id      text NOT NULL    -- the secrets key that sealed auth_cred
);
CREATE INDEX vim_auths_key_id ON vim_auths (key_id);

-- Deleting a VIM looks for instances whose vimConnectionInfo names it.
CREATE INDEX vnf_instances_vim_connection_info ON vnf_instances USING gin (vim_connection_info jsonb_path_ops);
