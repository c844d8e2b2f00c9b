-- VNF packages: the LCM-relevant part; the packages issue extends this table.
CREATE TABLE vnf_packages (
    id                uuid PRIMARY KEY,
    seq               bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    vnfd_id           text,
    onboarding_state  text NOT NULL DEFAULT 'CREATED',
    operational_state text NOT NULL DEFAULT 'DISABLED',
    usage_state       text NOT NULL DEFAULT 'NOT_IN_USE',
    vnfd              jsonb,
    created_at        timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX vnf_packages_vnfd_id ON vnf_packages (vnfd_id) WHERE vnfd_id IS NOT NULL;

CREATE TABLE vnf_instances (
    id                          uuid PRIMARY KEY,
    seq                         bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    vnf_instance_name           text,
    vnf_instance_description    text,
    vnfd_id                     text NOT NULL,
    vnf_pkg_id                  uuid,
    vnf_provider                text NOT NULL,
    vnf_product_name            text NOT NULL,
    vnf_software_version        text NOT NULL,
    vnfd_version                text NOT NULL,
    instantiation_state         text NOT NULL DEFAULT 'NOT_INSTANTIATED'
                                CHECK (instantiation_state IN ('NOT_INSTANTIATED','INSTANTIATED')),
    vnf_configurable_properties jsonb,
    vim_connection_info         jsonb,  -- secrets sealed
    instantiated_vnf_info       jsonb,  -- secrets sealed
    metadata                    jsonb,  -- secrets sealed
    extensions                  jsonb,
    version                     bigint NOT NULL DEFAULT 1, -- ETag
    created_at                  timestamptz NOT NULL DEFAULT now(),
    updated_at                  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX vnf_instances_name ON vnf_instances (vnf_instance_name);
CREATE INDEX vnf_instances_id_text ON vnf_instances ((id::text));
CREATE INDEX vnf_instances_vnfd_id ON vnf_instances (vnfd_id);
CREATE INDEX vnf_instances_state ON vnf_instances (instantiation_state);
CREATE INDEX vnf_instances_provider ON vnf_instances (vnf_provider, vnf_product_name);

-- The op occurrence row is the job: the engine claims it as a lease.
CREATE TABLE vnf_lcm_op_occs (
    id                       uuid PRIMARY KEY,
    seq                      bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    vnf_instance_id          uuid NOT NULL,
    operation                text NOT NULL,
    operation_state          text NOT NULL CHECK (operation_state IN
        ('STARTING','PROCESSING','COMPLETED','FAILED_TEMP','FAILED','ROLLING_BACK','ROLLED_BACK')),
    state_entered_time       timestamptz NOT NULL DEFAULT now(),
    start_time               timestamptz NOT NULL DEFAULT now(),
    grant_id                 text,
    is_automatic_invocation  boolean NOT NULL DEFAULT false,
    operation_params         jsonb NOT NULL DEFAULT '{}', -- secrets sealed
    is_cancel_pending        boolean NOT NULL DEFAULT false,
    cancel_mode              text,
    error                    jsonb,
    resource_changes         jsonb,
    changed_info             jsonb,
    changed_ext_connectivity jsonb,
    -- queue and journal state (never rendered)
    lease_owner              text,
    lease_until              timestamptz,
    attempts                 int NOT NULL DEFAULT 0,
    work                     jsonb, -- working copy of the instance between steps (sealed)
    created_at               timestamptz NOT NULL DEFAULT now()
);
-- At most one operation per instance that is not final: the 409 rule, atomically.
CREATE UNIQUE INDEX vnf_lcm_op_occs_one_active ON vnf_lcm_op_occs (vnf_instance_id)
    WHERE operation_state IN ('STARTING','PROCESSING','FAILED_TEMP','ROLLING_BACK');
CREATE INDEX vnf_lcm_op_occs_instance ON vnf_lcm_op_occs (vnf_instance_id, seq);
-- Filters compare ids as text (SOL013 values are strings): index those expressions.
CREATE INDEX vnf_lcm_op_occs_instance_text ON vnf_lcm_op_occs ((vnf_instance_id::text));
CREATE INDEX vnf_lcm_op_occs_id_text ON vnf_lcm_op_occs ((id::text));
CREATE INDEX vnf_lcm_op_occs_state ON vnf_lcm_op_occs (operation_state);
CREATE INDEX vnf_lcm_op_occs_operation ON vnf_lcm_op_occs (operation);
-- The claim query scans only runnable rows.
CREATE INDEX vnf_lcm_op_occs_runnable ON vnf_lcm_op_occs (seq)
    WHERE operation_state IN ('STARTING','PROCESSING','ROLLING_BACK');

-- The operation journal: one row per step, and per node inside a step.
CREATE TABLE op_journal (
    op_occ_id  uuid NOT NULL REFERENCES vnf_lcm_op_occs (id) ON DELETE CASCADE,
    step_index int NOT NULL,
    step       text NOT NULL,
    node       text NOT NULL DEFAULT '',
    phase      text NOT NULL DEFAULT 'run' CHECK (phase IN ('run','rollback')),
    state      text NOT NULL,
    attempt    int NOT NULL DEFAULT 1,
    message    text,
    error      text,
    output     jsonb,
    start_time timestamptz,
    end_time   timestamptz,
    PRIMARY KEY (op_occ_id, phase, step, node)
);

-- Filter views: each row's API document (without _links), so SOL013 filters on
-- any attribute path translate to SQL. Simple views: indexes on the base
-- columns still apply.
CREATE VIEW vnf_instances_doc AS
SELECT i.*, jsonb_strip_nulls(jsonb_build_object(
    'id', i.id::text,
    'vnfInstanceName', i.vnf_instance_name,
    'vnfInstanceDescription', i.vnf_instance_description,
    'vnfdId', i.vnfd_id,
    'vnfProvider', i.vnf_provider,
    'vnfProductName', i.vnf_product_name,
    'vnfSoftwareVersion', i.vnf_software_version,
    'vnfdVersion', i.vnfd_version,
    'vnfPkgId', i.vnf_pkg_id::text,
    'vnfConfigurableProperties', i.vnf_configurable_properties,
    'vimConnectionInfo', i.vim_connection_info,
    'instantiationState', i.instantiation_state,
    'instantiatedVnfInfo', i.instantiated_vnf_info,
    'metadata', i.metadata,
    'extensions', i.extensions)) AS doc
FROM vnf_instances i;

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
