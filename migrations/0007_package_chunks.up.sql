-- Package content streamed in 1 MiB chunks: an upload goes from a spool file
-- to the database without being held whole in memory. Rows stored before
-- keep their content in vnf_package_contents.content; new rows leave it NULL.
ALTER TABLE vnf_package_contents ALTER COLUMN content DROP NOT NULL;

CREATE TABLE vnf_package_chunks (
    package_id uuid NOT NULL REFERENCES vnf_package_contents (package_id) ON DELETE CASCADE,
    idx        int NOT NULL,
    data       bytea NOT NULL,
    PRIMARY KEY (package_id, idx)
);
