DROP VIEW IF EXISTS vnf_packages_doc;
DROP INDEX IF EXISTS vnf_packages_onboarding;
DROP INDEX IF EXISTS vnf_packages_id_text;
DROP INDEX IF EXISTS vnf_instances_pkg;
DROP TABLE IF EXISTS vnf_package_contents;
ALTER TABLE vnf_packages
    DROP COLUMN vnf_provider, DROP COLUMN vnf_product_name, DROP COLUMN vnf_software_version, DROP COLUMN vnfd_version,
    DROP COLUMN checksum, DROP COLUMN software_images, DROP COLUMN additional_artifacts, DROP COLUMN vnfd_files, DROP COLUMN user_defined_data,
    DROP COLUMN onboarding_failure, DROP COLUMN source, DROP COLUMN onboarding_owner, DROP COLUMN onboarding_until,
    DROP COLUMN updated_at,
    ADD COLUMN usage_state text NOT NULL DEFAULT 'NOT_IN_USE';
