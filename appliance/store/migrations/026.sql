-- Users who sign in with an OpenID provider: who the provider says
-- they are, their refresh token there (sealed), and when they last
-- signed in and were last checked.
CREATE TABLE sso_users (
		user_id INTEGER PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
		provider TEXT NOT NULL,
		subject TEXT NOT NULL,
		email TEXT NOT NULL,
		refresh TEXT NOT NULL,
		signed_in INTEGER NOT NULL,
		checked INTEGER NOT NULL,
		UNIQUE (provider, subject)
	 );
