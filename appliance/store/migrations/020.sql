-- The audit log (package audit): append-only, each entry chained to
-- the one before by a keyed hash; the anchor is where a pruned log
-- starts.
CREATE TABLE audit (
		seq INTEGER PRIMARY KEY,
		at INTEGER NOT NULL,
		at_text TEXT NOT NULL,
		user TEXT NOT NULL,
		via TEXT NOT NULL,
		addr TEXT NOT NULL,
		agent TEXT NOT NULL,
		action TEXT NOT NULL,
		box TEXT NOT NULL,
		box_owner TEXT NOT NULL,
		object TEXT NOT NULL,
		detail TEXT NOT NULL,
		result TEXT NOT NULL,
		prev TEXT NOT NULL,
		hash TEXT NOT NULL
	 );
	 CREATE INDEX audit_at ON audit (at);
	 CREATE INDEX audit_box ON audit (box, seq);
	 CREATE INDEX audit_user ON audit (user, seq);
	 CREATE TRIGGER audit_append_only BEFORE UPDATE ON audit
	 BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
	 CREATE TABLE audit_anchor (
		one INTEGER PRIMARY KEY CHECK (one = 1),
		seq INTEGER NOT NULL,
		hash TEXT NOT NULL,
		seal TEXT NOT NULL
	 );
