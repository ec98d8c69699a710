-- Moves between servers under way: what a move shipped, so that one a
-- crash cut off is finished or undone after the next start.
CREATE TABLE moves (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		source TEXT NOT NULL,
		target TEXT NOT NULL,
		boxes TEXT NOT NULL,
		drives TEXT NOT NULL,
		running TEXT NOT NULL,
		snaps TEXT NOT NULL,
		started INTEGER NOT NULL
	 );
