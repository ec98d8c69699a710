-- Boxes get a fixed address on the box network, so that their
-- firewall rules exist before their container does.
ALTER TABLE boxes ADD COLUMN ip TEXT NOT NULL DEFAULT '';
