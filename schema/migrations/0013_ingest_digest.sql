-- 0013: a batch id names its contents (issue 26). ingest_batches.digest is the SHA-256 of what
-- the batch carried (sweep uid, hardware key, every measurement with its samples; not the
-- sweep's status or progress, which move on between two pushes of one batch), so the same id
-- arriving with other contents is refused (HTTP 409) instead of answered as a replay while its
-- new data is dropped. Batches recorded before this migration keep '' and are still answered
-- as replays: what they carried was not recorded.
-- Append-only: a later change is a new numbered file, never an edit of this one.
ALTER TABLE ingest_batches ADD COLUMN digest TEXT NOT NULL DEFAULT '';
