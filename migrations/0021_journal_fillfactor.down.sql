ALTER TABLE op_journal RESET (fillfactor);
