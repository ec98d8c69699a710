-- A box's own labels.
ALTER TABLE boxes ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';
