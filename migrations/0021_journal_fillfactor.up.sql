-- A journal row is inserted when its step or node starts and updated when it
-- ends, moments later, while other operations fill the same page with their
-- rows: about a third of those updates found no room on the row's page and
-- went to another, which made them non-HOT (an entry in the primary key
-- and a second page in the WAL record). Pages filled to 70 % keep room for
-- the update next to its row. It applies to pages written from now on.
ALTER TABLE op_journal SET (fillfactor = 70);
