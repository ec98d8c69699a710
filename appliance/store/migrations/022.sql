-- Each user's own quota; a NULL takes the server's default
-- (limits.* in the configuration).
CREATE TABLE quotas (
		user_id INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
		boxes INTEGER,
		running INTEGER,
		drives INTEGER,
		drive_gib REAL,
		jobs INTEGER,
		types TEXT
	 );
