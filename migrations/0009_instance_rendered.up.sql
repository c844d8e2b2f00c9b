-- The API document of each instance, rendered once per change (masked,
-- serialised, without _links): GET /vnf_instances/{id} sends it as it is.
-- rendered_version is the instance version it was rendered from and
-- rendered_rev the VNFM build that rendered it (masking rules, model); a GET
-- uses it only when both match, and renders it again otherwise.
ALTER TABLE vnf_instances
    ADD COLUMN rendered_doc bytea,
    ADD COLUMN rendered_version bigint,
    ADD COLUMN rendered_rev text;

-- Whatever updates an instance without rendering it again (a key rotation
-- re-sealing a column, a hand-written UPDATE) drops the rendered document,
-- so a stale one can never be served.
CREATE FUNCTION vnf_instances_rendered_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.rendered_version IS NOT DISTINCT FROM OLD.rendered_version
       AND NEW.rendered_rev IS NOT DISTINCT FROM OLD.rendered_rev THEN
        NEW.rendered_doc := NULL;
        NEW.rendered_version := NULL;
        NEW.rendered_rev := NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER vnf_instances_rendered_stale BEFORE UPDATE ON vnf_instances
    FOR EACH ROW EXECUTE FUNCTION vnf_instances_rendered_stale();
