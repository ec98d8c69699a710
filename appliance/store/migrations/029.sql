-- Groups of users: set by the owner, or by a sign-in provider (source
-- sso:ID, replaced at each sign-in); a group's quota; boxes shared
-- with a group.
CREATE TABLE user_groups (
		user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
		grp TEXT NOT NULL,
		source TEXT NOT NULL,
		PRIMARY KEY (user_id, grp, source)
	 );
	 CREATE INDEX user_groups_grp ON user_groups (grp);
	 CREATE TABLE group_quotas (
		grp TEXT PRIMARY KEY,
		boxes INTEGER,
		running INTEGER,
		drives INTEGER,
		drive_gib REAL,
		jobs INTEGER,
		types TEXT
	 );
	 CREATE TABLE group_grants (
		box TEXT NOT NULL,
		grp TEXT NOT NULL,
		access TEXT NOT NULL,
		PRIMARY KEY (box, grp)
	 );
	 CREATE TRIGGER seen_user_groups_i AFTER INSERT ON user_groups BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_user_groups_d AFTER DELETE ON user_groups BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_group_grants_i AFTER INSERT ON group_grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_group_grants_u AFTER UPDATE ON group_grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_group_grants_d AFTER DELETE ON group_grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
