-- Every box has an id of its own from its creation; a removed box is a
-- tombstone that holds its name until its engine objects are gone.
-- Boxes from before ids keep '' (their containers stay as they are).
ALTER TABLE boxes ADD COLUMN uid TEXT NOT NULL DEFAULT '';
	 CREATE TABLE tombstones (
		name TEXT PRIMARY KEY,
		uid TEXT NOT NULL DEFAULT '',
		removed INTEGER NOT NULL
	 );
