-- Work a migration cannot do itself, because it needs the secret key, is
-- queued here; the next server start does it (lcm.Service.RunPendingTasks)
-- and deletes the row.
CREATE TABLE pending_tasks (
    name       text PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- A MODIFY_INFO that changed vimConnectionInfo stored the new
-- accessInfo.password in changedInfo in plain text (fixed for new rows in
-- 35ea10f): seal what older builds wrote.
INSERT INTO pending_tasks (name) VALUES ('seal-changed-info');
