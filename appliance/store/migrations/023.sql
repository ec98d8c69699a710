-- A server's own warm pool: pool boxes of each type kept on it, beside
-- those warm_pool keeps wherever there is most room ('' is the
-- control plane's own server).
CREATE TABLE node_pools (
		node TEXT NOT NULL,
		type TEXT NOT NULL,
		count INTEGER NOT NULL,
		PRIMARY KEY (node, type)
	 );
