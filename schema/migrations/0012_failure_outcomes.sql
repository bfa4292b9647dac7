-- 0012: compile_failed and runtime_failed are outcomes of their own (issue 15). An external
-- kernel's runner reports them ({"outcome": "compile_failed"}), Kernel Tuner writes
-- CompilationFailedConfig / RuntimeFailedConfig and T4 its "compile" / "runtime" invalidity;
-- until now they were stored as invalid / crashed with the marker in the detail. SQLite cannot
-- alter a CHECK constraint, so measurements and final_rounds are rebuilt with the two names
-- added (new table with every column, copy, drop, rename, recreate the index, as 0008 did;
-- schema/migrate.cc keeps foreign keys off and checks them before its COMMIT, so every id and
-- every reference from samples and tuned_entries survives). Rows stored before keep their
-- outcome: which invalid rows were compile failures is only in their detail, and a migration
-- does not guess from prose.
-- Append-only: a later change is a new numbered file, never an edit of this one.
CREATE TABLE measurements_new (
  id INTEGER PRIMARY KEY,
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id),
  bucket TEXT NOT NULL,
  problem TEXT NOT NULL,  -- canonical dims that were timed
  config TEXT NOT NULL,   -- canonical block sizes, e.g. block_m=96,block_n=512,block_k=256
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'invalid', 'crashed', 'timeout', 'out_of_memory', 'nan',
                                           'wrong_result', 'unstable', 'worker_lost', 'compile_failed',
                                           'runtime_failed')),
  detail TEXT NOT NULL DEFAULT '',
  iterations INTEGER NOT NULL DEFAULT 0,
  median_ns REAL,
  cv REAL,
  max_abs_err REAL,
  max_rel_err REAL,
  created_at TEXT NOT NULL,
  fingerprint TEXT,
  UNIQUE (sweep_id, bucket, config)
);

INSERT INTO measurements_new (id, sweep_id, bucket, problem, config, outcome, detail, iterations, median_ns, cv,
                              max_abs_err, max_rel_err, created_at, fingerprint)
  SELECT id, sweep_id, bucket, problem, config, outcome, detail, iterations, median_ns, cv,
         max_abs_err, max_rel_err, created_at, fingerprint
  FROM measurements;

DROP TABLE measurements;
ALTER TABLE measurements_new RENAME TO measurements;
CREATE INDEX measurements_by_sweep ON measurements (sweep_id, id);

CREATE TABLE final_rounds_new (
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id),
  bucket TEXT NOT NULL,
  config TEXT NOT NULL,
  position INTEGER NOT NULL,  -- order timed; the incumbent, when it took part, last
  is_incumbent INTEGER NOT NULL CHECK (is_incumbent IN (0, 1)),
  chosen INTEGER NOT NULL CHECK (chosen IN (0, 1)),
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'invalid', 'crashed', 'timeout', 'out_of_memory', 'nan',
                                           'wrong_result', 'unstable', 'worker_lost', 'compile_failed',
                                           'runtime_failed')),
  iterations INTEGER NOT NULL DEFAULT 0,
  repetitions INTEGER NOT NULL DEFAULT 0,
  median_ns REAL,
  cv REAL,
  noise_band REAL NOT NULL,
  decision TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (sweep_id, bucket, config)
) WITHOUT ROWID;

INSERT INTO final_rounds_new (sweep_id, bucket, config, position, is_incumbent, chosen, outcome, iterations,
                              repetitions, median_ns, cv, noise_band, decision, created_at)
  SELECT sweep_id, bucket, config, position, is_incumbent, chosen, outcome, iterations,
         repetitions, median_ns, cv, noise_band, decision, created_at
  FROM final_rounds;

DROP TABLE final_rounds;
ALTER TABLE final_rounds_new RENAME TO final_rounds;
