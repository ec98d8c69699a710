-- A share shows on the events stream of the user it is given to.
CREATE TRIGGER seen_grants_i AFTER INSERT ON grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_grants_u AFTER UPDATE ON grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
	 CREATE TRIGGER seen_grants_d AFTER DELETE ON grants BEGIN UPDATE meta SET v = v + 1 WHERE k = 'seen'; END;
