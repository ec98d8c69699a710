-- Users, their one-time links (owner setup, invites), and who owns
-- what. Owner 0 is "before there were users": only owners see it.
CREATE TABLE users (
		id INTEGER PRIMARY KEY AUTOINCREMENT,
		name TEXT NOT NULL UNIQUE,
		role TEXT NOT NULL,
		password TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL
	 );
	 CREATE TABLE links (
		hash TEXT PRIMARY KEY,
		kind TEXT NOT NULL,
		role TEXT NOT NULL,
		created INTEGER NOT NULL,
		expires INTEGER NOT NULL
	 );
	 ALTER TABLE tokens ADD COLUMN user_id INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE tokens ADD COLUMN kind TEXT NOT NULL DEFAULT 'api';
	 ALTER TABLE tokens ADD COLUMN expires INTEGER;
	 ALTER TABLE tokens ADD COLUMN csrf TEXT NOT NULL DEFAULT '';
	 ALTER TABLE boxes ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE drives ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE policies ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE ssh_keys ADD COLUMN owner INTEGER NOT NULL DEFAULT 0;
