-- Where each snapshot stands with the object store: '' or 'local' (on
-- its server only), 'shipping', 'shipped'; ship_error is the last
-- shipping's failure.
ALTER TABLE snapshots ADD COLUMN shipped TEXT NOT NULL DEFAULT '';
ALTER TABLE snapshots ADD COLUMN ship_error TEXT NOT NULL DEFAULT '';
