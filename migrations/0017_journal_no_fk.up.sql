-- The journal's rows need no foreign key to their operation: every journal
-- write (store.WriteOps) is fenced by a statement that locks its op row,
-- held under its writer's lease, until the commit, and writes nothing for an
-- op it does not find; op rows are never deleted, so ON DELETE CASCADE never
-- ran. The key's check was one more statement per journal row written (four
-- per operation, each a lookup and a share lock of the row the fence holds).
ALTER TABLE op_journal DROP CONSTRAINT op_journal_op_occ_id_fkey;
