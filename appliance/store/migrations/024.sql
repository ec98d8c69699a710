-- A box's idle stop (0: its type's; negative: never) and whether it
-- stopped it (the box wakes on use).
ALTER TABLE boxes ADD COLUMN idle_stop_seconds INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE boxes ADD COLUMN slept INTEGER NOT NULL DEFAULT 0;
