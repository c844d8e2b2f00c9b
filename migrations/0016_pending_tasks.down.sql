-- What the older build reads stays as the tasks left it (sealed values it
-- opens as before).
DROP TABLE pending_tasks;
