CREATE TABLE meta (k TEXT PRIMARY KEY, v INTEGER NOT NULL);
	 INSERT INTO meta VALUES ('serial', 0);
	 CREATE TABLE boxes (
		name TEXT PRIMARY KEY,
		type TEXT NOT NULL,
		image TEXT NOT NULL,
		ttl_seconds INTEGER NOT NULL DEFAULT 0,
		expires_at INTEGER,
		mounts TEXT NOT NULL DEFAULT '[]',
		env TEXT NOT NULL DEFAULT '{}',
		desired TEXT NOT NULL,
		from_snapshot TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL,
		observed TEXT NOT NULL DEFAULT 'pending',
		observed_error TEXT NOT NULL DEFAULT ''
	 );
	 CREATE TABLE drives (
		name TEXT PRIMARY KEY,
		state TEXT NOT NULL,
		created INTEGER NOT NULL
	 );
	 CREATE TABLE snapshots (
		id TEXT PRIMARY KEY,
		box TEXT NOT NULL,
		reason TEXT NOT NULL,
		state TEXT NOT NULL,
		error TEXT NOT NULL DEFAULT '',
		created INTEGER NOT NULL
	 );
	 CREATE INDEX snapshots_box ON snapshots(box, created);
	 CREATE TABLE jobs (
		id TEXT PRIMARY KEY,
		box TEXT NOT NULL,
		cmd TEXT NOT NULL,
		state TEXT NOT NULL,
		exit_code INTEGER,
		started INTEGER NOT NULL,
		ended INTEGER
	 );
	 CREATE TABLE tokens (
		hash TEXT PRIMARY KEY,
		name TEXT NOT NULL,
		created INTEGER NOT NULL
	 );
