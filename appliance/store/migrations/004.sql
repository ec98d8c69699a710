-- Secrets for agents, encrypted with a key kept outside the database.
CREATE TABLE secrets (
		name TEXT PRIMARY KEY,
		sealed BLOB NOT NULL,
		updated INTEGER NOT NULL
	 );
