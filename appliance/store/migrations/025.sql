-- What running boxes used, a sample every metrics_interval (thinned
-- to one a minute after an hour, kept for metrics_keep), and the
-- processes the kernel killed for a box's memory bound.
CREATE TABLE metrics (
		box TEXT NOT NULL,
		at INTEGER NOT NULL,
		cpu REAL NOT NULL,
		memory INTEGER NOT NULL,
		memory_limit INTEGER NOT NULL,
		disk INTEGER NOT NULL,
		disk_limit INTEGER NOT NULL,
		net_rx INTEGER NOT NULL,
		net_tx INTEGER NOT NULL,
		rx_rate REAL NOT NULL,
		tx_rate REAL NOT NULL,
		processes INTEGER NOT NULL
	 );
	 CREATE INDEX metrics_box_at ON metrics (box, at);
	 CREATE INDEX metrics_at ON metrics (at);
	 ALTER TABLE boxes ADD COLUMN oom_kills INTEGER NOT NULL DEFAULT 0;
	 ALTER TABLE boxes ADD COLUMN oom_at INTEGER;
	 ALTER TABLE boxes ADD COLUMN oom_seen INTEGER NOT NULL DEFAULT 0;
