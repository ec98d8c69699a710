-- Boxes its disk bound stopped get a grace to free space when they
-- start again (before, a note on a box that had not slept said so).
ALTER TABLE boxes ADD COLUMN disk_stopped INTEGER NOT NULL DEFAULT 0;
	 UPDATE boxes SET disk_stopped = 1 WHERE note != '' AND slept = 0 AND desired = 'stopped';
