-- 0006: the daemon's durability and control tables: a sweep's tasks (one per bucket, leased
-- by the single job runner), idempotency keys for sweep creation, and overrides (pins).
-- Append-only: a later change is a new numbered file, never an edit of this one.

-- One row per distinct bucket of a sweep. The runner leases the oldest queued task (status
-- 'running', attempts + 1); a daemon that dies leaves it 'running', and the next start puts it
-- back to 'queued'. A lost lease never counts against a config: only committed measurements
-- (UNIQUE (sweep_id, bucket, config) in 0001) say a config was tried.
CREATE TABLE sweep_tasks (
  id INTEGER PRIMARY KEY,
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id),
  ordinal INTEGER NOT NULL,   -- position of the bucket in the request
  bucket TEXT NOT NULL,
  shape TEXT NOT NULL,        -- canonical dims of the first requested shape in this bucket
  planned INTEGER NOT NULL,   -- measurements this task will record (invalid + planned configs)
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
  attempts INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  started_at TEXT,
  finished_at TEXT,
  UNIQUE (sweep_id, bucket)
);
CREATE INDEX sweep_tasks_by_status ON sweep_tasks (status, sweep_id, ordinal);

-- A retried POST /v1/sweeps with the same Idempotency-Key returns the sweep the first one made;
-- the same key with a different body is a conflict.
CREATE TABLE idempotency_keys (
  idempotency_key TEXT PRIMARY KEY,
  request TEXT NOT NULL,      -- canonical JSON of the decoded request
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id),
  created_at TEXT NOT NULL
);

-- A pinned config for (kernel, hardware key or prefix, dtype, bucket), served by the resolver
-- ahead of tuned rows and reported with source 'override'.
CREATE TABLE overrides (
  id INTEGER PRIMARY KEY,
  kernel TEXT NOT NULL,
  hardware_key TEXT NOT NULL,
  dtype TEXT NOT NULL,
  bucket TEXT NOT NULL,
  config TEXT NOT NULL,
  reason TEXT NOT NULL,
  expires_at TEXT,            -- UTC ISO-8601; NULL: never
  created_at TEXT NOT NULL,
  UNIQUE (kernel, hardware_key, dtype, bucket)
);

-- Paging a sweep's measurements by id.
CREATE INDEX measurements_by_sweep ON measurements (sweep_id, id);
