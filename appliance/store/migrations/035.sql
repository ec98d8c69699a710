-- The buckets a box mounts (a JSON list of store.BucketMount): a bucket
-- of its user's own in an S3-compatible store, mounted by its server.
ALTER TABLE boxes ADD COLUMN buckets TEXT NOT NULL DEFAULT '[]';
