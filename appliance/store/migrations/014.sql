-- A counter that every write to what the events stream shows moves
-- (Seen), so that a watcher reads the tables only after a change.
INSERT INTO meta VALUES ('seen', 0);
	 CREATE TRIGGER seen_boxes_i AFTER INSERT ON boxes BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_boxes_u AFTER UPDATE ON boxes BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_boxes_d AFTER DELETE ON boxes BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_drives_i AFTER INSERT ON drives BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_drives_u AFTER UPDATE ON drives BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_drives_d AFTER DELETE ON drives BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_snapshots_i AFTER INSERT ON snapshots BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_snapshots_u AFTER UPDATE ON snapshots BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_snapshots_d AFTER DELETE ON snapshots BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_jobs_i AFTER INSERT ON jobs BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_jobs_u AFTER UPDATE ON jobs BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_jobs_d AFTER DELETE ON jobs BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_users_i AFTER INSERT ON users BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_users_u AFTER UPDATE ON users BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_users_d AFTER DELETE ON users BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
