-- Staging folders an upload made (in a box, or in a drive's volume),
-- listed until the upload removed them: one a crash cut off is
-- removed after the next start.
CREATE TABLE leftovers (
		kind TEXT NOT NULL,
		target TEXT NOT NULL,
		path TEXT NOT NULL,
		PRIMARY KEY (kind, target, path)
	 );
