-- The labels a box's server must have (placement).
ALTER TABLE boxes ADD COLUMN node_labels TEXT NOT NULL DEFAULT '{}';
