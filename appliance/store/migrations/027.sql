-- Boxes shared with users other than their owner: as viewer (they
-- read it) or member (they work in it).
CREATE TABLE grants (
		box TEXT NOT NULL,
		user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
		access TEXT NOT NULL,
		PRIMARY KEY (box, user_id)
	 );
	 CREATE INDEX grants_user ON grants (user_id);
