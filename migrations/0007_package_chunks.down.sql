-- Chunked content cannot go back into one column without a rewrite: packages
-- stored in chunks lose their content (upload them again).
DROP TABLE vnf_package_chunks;
DELETE FROM vnf_package_contents WHERE content IS NULL;
ALTER TABLE vnf_package_contents ALTER COLUMN content SET NOT NULL;
