-- Servers beyond the control plane's own ("nodes"), the one-time
-- tokens that let a server join, and the node every engine object is
-- on ('' is the control plane's own server: a single-server install
-- has nothing else).
CREATE TABLE nodes (
		name TEXT PRIMARY KEY,
		addr TEXT NOT NULL,
		subnet TEXT NOT NULL UNIQUE,
		labels TEXT NOT NULL DEFAULT '{}',
		joined INTEGER NOT NULL,
		cert TEXT NOT NULL
	 );
	 CREATE TABLE node_joins (
		hash TEXT PRIMARY KEY,
		expires INTEGER NOT NULL,
		created INTEGER NOT NULL
	 );
	 ALTER TABLE boxes ADD COLUMN node TEXT NOT NULL DEFAULT '';
	 ALTER TABLE pool ADD COLUMN node TEXT NOT NULL DEFAULT '';
	 ALTER TABLE tombstones ADD COLUMN node TEXT NOT NULL DEFAULT '';
	 ALTER TABLE drives ADD COLUMN node TEXT NOT NULL DEFAULT '';
	 ALTER TABLE snapshots ADD COLUMN node TEXT NOT NULL DEFAULT '';
