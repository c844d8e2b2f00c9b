-- VNF package management (SOL005 subset): package info, stored CSAR content,
-- asynchronous onboarding with a lease so an interrupted onboarding resumes.
ALTER TABLE vnf_packages
    DROP COLUMN usage_state, -- derived from the instances that reference the package
    ADD COLUMN vnf_provider         text,
    ADD COLUMN vnf_product_name     text,
    ADD COLUMN vnf_software_version text,
    ADD COLUMN vnfd_version         text,
    ADD COLUMN checksum             jsonb,
    ADD COLUMN software_images      jsonb,
    ADD COLUMN additional_artifacts jsonb,
    ADD COLUMN vnfd_files           jsonb, -- CSAR paths that make up the VNFD (GET .../vnfd)
    ADD COLUMN user_defined_data    jsonb,
    ADD COLUMN onboarding_failure   jsonb, -- ProblemDetails of the last failed onboarding
    ADD COLUMN source               jsonb, -- upload_from_uri request, password sealed
    ADD COLUMN onboarding_owner     text,
    ADD COLUMN onboarding_until     timestamptz,
    ADD COLUMN updated_at           timestamptz NOT NULL DEFAULT now();

CREATE TABLE vnf_package_contents (
    package_id uuid PRIMARY KEY REFERENCES vnf_packages (id) ON DELETE CASCADE,
    content    bytea NOT NULL,
    size       bigint NOT NULL,
    sha256     text NOT NULL
);

CREATE INDEX vnf_instances_pkg ON vnf_instances (vnf_pkg_id);
CREATE INDEX vnf_packages_id_text ON vnf_packages ((id::text));
CREATE INDEX vnf_packages_onboarding ON vnf_packages (onboarding_state);

CREATE VIEW vnf_packages_doc AS
SELECT p.*,
    CASE WHEN EXISTS (SELECT 1 FROM vnf_instances i WHERE i.vnf_pkg_id = p.id) THEN 'IN_USE' ELSE 'NOT_IN_USE' END AS usage_state,
    jsonb_strip_nulls(jsonb_build_object(
        'id', p.id::text,
        'vnfdId', p.vnfd_id,
        'vnfProvider', p.vnf_provider,
        'vnfProductName', p.vnf_product_name,
        'vnfSoftwareVersion', p.vnf_software_version,
        'vnfdVersion', p.vnfd_version,
        'checksum', p.checksum,
        'softwareImages', p.software_images,
        'additionalArtifacts', p.additional_artifacts,
        'onboardingState', p.onboarding_state,
        'operationalState', p.operational_state,
        'usageState', CASE WHEN EXISTS (SELECT 1 FROM vnf_instances i WHERE i.vnf_pkg_id = p.id) THEN 'IN_USE' ELSE 'NOT_IN_USE' END,
        'userDefinedData', p.user_defined_data)) AS doc
FROM vnf_packages p;
