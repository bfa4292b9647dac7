-- 0001: hardware profiles, sweeps, every measurement with every sample, tuned entries.
-- Append-only: a later change is a new numbered file, never an edit of this one.

CREATE TABLE hardware_profiles (
  id INTEGER PRIMARY KEY,
  hardware_key TEXT NOT NULL UNIQUE,
  arch TEXT NOT NULL,
  isa TEXT NOT NULL,
  vendor TEXT NOT NULL,
  cpu_family INTEGER NOT NULL,
  cpu_model INTEGER NOT NULL,
  model_name TEXT NOT NULL,
  cores INTEGER NOT NULL,
  l1d_bytes INTEGER NOT NULL,
  l2_bytes INTEGER NOT NULL,
  l3_bytes INTEGER NOT NULL,
  threads INTEGER NOT NULL,
  first_seen_at TEXT NOT NULL
);

CREATE TABLE sweeps (
  id INTEGER PRIMARY KEY,
  kernel TEXT NOT NULL,
  dtype TEXT NOT NULL,
  hardware_id INTEGER NOT NULL REFERENCES hardware_profiles (id),
  threads INTEGER NOT NULL CHECK (threads >= 1),
  strategy TEXT NOT NULL CHECK (strategy IN ('exhaustive', 'random')),
  budget INTEGER NOT NULL CHECK (budget >= 0),
  seed INTEGER NOT NULL,
  shapes TEXT NOT NULL,  -- canonical dims of each requested shape, ';'-separated
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'done', 'failed', 'cancelled')),
  progress_done INTEGER NOT NULL DEFAULT 0,
  progress_total INTEGER NOT NULL DEFAULT 0,
  error TEXT NOT NULL DEFAULT '',
  bucket_version INTEGER NOT NULL,
  tool_version TEXT NOT NULL,
  created_at TEXT NOT NULL,
  started_at TEXT,
  finished_at TEXT
);
CREATE INDEX sweeps_by_status ON sweeps (status, id);

CREATE TABLE measurements (
  id INTEGER PRIMARY KEY,
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id),
  bucket TEXT NOT NULL,
  problem TEXT NOT NULL,  -- canonical dims that were timed
  config TEXT NOT NULL,   -- canonical block sizes, e.g. block_m=96,block_n=512,block_k=256
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'invalid', 'crashed', 'timeout', 'out_of_memory', 'nan',
                                           'wrong_result', 'unstable', 'worker_lost')),
  detail TEXT NOT NULL DEFAULT '',
  iterations INTEGER NOT NULL DEFAULT 0,
  median_ns REAL,
  cv REAL,
  max_abs_err REAL,
  max_rel_err REAL,
  created_at TEXT NOT NULL,
  UNIQUE (sweep_id, bucket, config)
);

CREATE TABLE samples (
  measurement_id INTEGER NOT NULL REFERENCES measurements (id),
  repetition INTEGER NOT NULL,
  ns_per_iteration REAL NOT NULL,
  PRIMARY KEY (measurement_id, repetition)
) WITHOUT ROWID;

CREATE TABLE tuned_entries (
  kernel TEXT NOT NULL,
  hardware_key TEXT NOT NULL,
  dtype TEXT NOT NULL,
  bucket TEXT NOT NULL,
  bucket_version INTEGER NOT NULL,
  config TEXT NOT NULL,
  median_ns REAL NOT NULL,
  samples INTEGER NOT NULL,
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id),
  measurement_id INTEGER NOT NULL REFERENCES measurements (id),
  measured_at TEXT NOT NULL,
  PRIMARY KEY (kernel, hardware_key, dtype, bucket)
);
