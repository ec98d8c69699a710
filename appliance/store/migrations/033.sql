-- Who made each one-time link (invitations are listed with it).
ALTER TABLE links ADD COLUMN by_user INTEGER NOT NULL DEFAULT 0;
