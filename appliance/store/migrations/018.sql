-- A server no new box goes to.
ALTER TABLE nodes ADD COLUMN drained INTEGER NOT NULL DEFAULT 0;
