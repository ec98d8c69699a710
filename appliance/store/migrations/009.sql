-- An SSH key and a key name are unique per user, not across users: one
-- user registering another's public key takes nothing from them.
CREATE TABLE user_ssh_keys (
		owner INTEGER NOT NULL,
		fingerprint TEXT NOT NULL,
		name TEXT NOT NULL,
		key TEXT NOT NULL,
		created INTEGER NOT NULL,
		PRIMARY KEY (owner, fingerprint),
		UNIQUE (owner, name)
	 );
	 INSERT INTO user_ssh_keys (owner, fingerprint, name, key, created)
		SELECT owner, fingerprint, name, key, created FROM ssh_keys;
	 DROP TABLE ssh_keys;
