-- The last applied request of each Boxfile project, to tell its drift.
CREATE TABLE projects (
		name TEXT PRIMARY KEY,
		owner INTEGER NOT NULL,
		request TEXT NOT NULL,
		applied INTEGER NOT NULL,
		applied_by TEXT NOT NULL,
		serial INTEGER NOT NULL
	 );
