-- The warm pool: boxes made ahead of any request, under engine names
-- of their own (key). A box claimed from it keeps that name in the
-- engine (boxes.engine; '' means the box's own name), and so does its
-- tombstone.
CREATE TABLE pool (
		key TEXT PRIMARY KEY,
		uid TEXT NOT NULL,
		type TEXT NOT NULL,
		image TEXT NOT NULL,
		image_id TEXT NOT NULL,
		desktop INTEGER NOT NULL,
		ip TEXT NOT NULL,
		created INTEGER NOT NULL,
		ready INTEGER NOT NULL DEFAULT 0
	 );
	 ALTER TABLE boxes ADD COLUMN engine TEXT NOT NULL DEFAULT '';
	 ALTER TABLE tombstones ADD COLUMN engine TEXT NOT NULL DEFAULT '';
