-- Brokered secrets (package broker): the hosts a secret may be sent
-- to, the header it goes in, a per-box rate; and what each box sent
-- through the broker with each secret.
ALTER TABLE user_secrets ADD COLUMN broker_hosts TEXT NOT NULL DEFAULT '';
	 ALTER TABLE user_secrets ADD COLUMN broker_header TEXT NOT NULL DEFAULT '';
	 ALTER TABLE user_secrets ADD COLUMN broker_limit TEXT NOT NULL DEFAULT '';
	 CREATE TABLE broker_use (
		box TEXT NOT NULL,
		secret TEXT NOT NULL,
		requests INTEGER NOT NULL DEFAULT 0,
		refused INTEGER NOT NULL DEFAULT 0,
		bytes_up INTEGER NOT NULL DEFAULT 0,
		bytes_down INTEGER NOT NULL DEFAULT 0,
		s2 INTEGER NOT NULL DEFAULT 0,
		s4 INTEGER NOT NULL DEFAULT 0,
		s5 INTEGER NOT NULL DEFAULT 0,
		last_status INTEGER NOT NULL DEFAULT 0,
		last_at INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (box, secret)
	 );
