-- Every journal row was written under its op row's lock: the key holds.
ALTER TABLE op_journal ADD CONSTRAINT op_journal_op_occ_id_fkey
    FOREIGN KEY (op_occ_id) REFERENCES vnf_lcm_op_occs (id) ON DELETE CASCADE;
