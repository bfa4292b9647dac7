-- 0011: many machines, one database (issue 14). A sweep gets an identity that survives a copy
-- to another database (uid), the host it ran on, the shard of its plan it measured
-- (`blocktune sweep --local --shard I/N`), and whether it was imported by `blocktune db merge`
-- or POST /v1/results (imported sweeps are never planned or run here: their measurements are
-- another machine's). ingest_batches remembers every batch of results applied, so a batch sent
-- again after a timeout or a kill is answered from here and adds nothing.
-- Append-only: a later change is a new numbered file, never an edit of this one.
ALTER TABLE sweeps ADD COLUMN uid TEXT NOT NULL DEFAULT '';
ALTER TABLE sweeps ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE sweeps ADD COLUMN shard_index INTEGER NOT NULL DEFAULT 0 CHECK (shard_index >= 0);
ALTER TABLE sweeps ADD COLUMN shard_count INTEGER NOT NULL DEFAULT 1 CHECK (shard_count >= 1);
ALTER TABLE sweeps ADD COLUMN imported INTEGER NOT NULL DEFAULT 0 CHECK (imported IN (0, 1));
UPDATE sweeps SET uid = lower(hex(randomblob(16)));
CREATE UNIQUE INDEX sweeps_by_uid ON sweeps (uid);

CREATE TABLE ingest_batches (
  batch_id TEXT PRIMARY KEY,   -- chosen by the sender: sweep uid, first and last measurement of the batch
  sweep_uid TEXT NOT NULL,
  measurements INTEGER NOT NULL,  -- in the batch
  inserted INTEGER NOT NULL,      -- new here when it was first applied
  created_at TEXT NOT NULL
) WITHOUT ROWID;
