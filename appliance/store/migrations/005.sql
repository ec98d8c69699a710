-- Public keys that may open SSH sessions to boxes.
CREATE TABLE ssh_keys (
		fingerprint TEXT PRIMARY KEY,
		name TEXT NOT NULL UNIQUE,
		key TEXT NOT NULL,
		created INTEGER NOT NULL
	 );
