-- Users' own images (package images): one row per name and tag, who
-- may use them, and the builds under way (what a crash leaves).
ALTER TABLE boxes ADD COLUMN builder INTEGER NOT NULL DEFAULT 0;
	 CREATE TABLE images (
		owner INTEGER NOT NULL,
		name TEXT NOT NULL,
		tag TEXT NOT NULL,
		image_id TEXT NOT NULL,
		size INTEGER NOT NULL DEFAULT 0,
		dockerfile TEXT NOT NULL DEFAULT '',
		context_digest TEXT NOT NULL DEFAULT '',
		inputs TEXT NOT NULL DEFAULT '',
		bases TEXT NOT NULL DEFAULT '[]',
		project TEXT NOT NULL DEFAULT '',
		built INTEGER NOT NULL,
		build_ms INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (owner, name, tag)
	 );
	 CREATE TABLE image_shares (
		owner INTEGER NOT NULL,
		name TEXT NOT NULL,
		kind TEXT NOT NULL,
		who TEXT NOT NULL,
		PRIMARY KEY (owner, name, kind, who)
	 );
	 CREATE TABLE builds (
		id TEXT PRIMARY KEY,
		owner INTEGER NOT NULL,
		name TEXT NOT NULL,
		tag TEXT NOT NULL,
		box TEXT NOT NULL,
		image_id TEXT NOT NULL DEFAULT '',
		started INTEGER NOT NULL
	 );
