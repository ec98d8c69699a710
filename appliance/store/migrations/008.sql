-- Secrets belong to a user. Those from before were the owner's.
CREATE TABLE user_secrets (
		owner INTEGER NOT NULL,
		name TEXT NOT NULL,
		sealed BLOB NOT NULL,
		updated INTEGER NOT NULL,
		shared INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (owner, name)
	 );
	 INSERT INTO user_secrets (owner, name, sealed, updated)
		SELECT COALESCE((SELECT min(id) FROM users WHERE role = 'owner'), 0), name, sealed, updated FROM secrets;
	 DROP TABLE secrets;
