-- 0005: search strategies, sweep environment, decision rounds.
-- sweeps.strategy gains the model-guided strategies ('anneal', 'surrogate'). SQLite cannot
-- alter a CHECK constraint, so the table is rebuilt (the 12-step procedure of
-- https://www.sqlite.org/lang_altertable.html#otheralter): new table, copy, drop, rename,
-- recreate the index. Store::Migrate runs every migration with foreign_keys off and runs
-- foreign_key_check before its COMMIT (steps 1, 10 and 12 of the procedure), so dropping the
-- parent of measurements/tuned_entries is allowed and the rebuilt table keeps every id.
-- New sweep columns: the per-bucket search budget in seconds, and the environment the sweep
-- ran in (tuner/timing/environment.h; '' until the sweep starts, or where not readable).
CREATE TABLE sweeps_new (
  id INTEGER PRIMARY KEY,
  kernel TEXT NOT NULL,
  dtype TEXT NOT NULL,
  hardware_id INTEGER NOT NULL REFERENCES hardware_profiles (id),
  threads INTEGER NOT NULL CHECK (threads >= 1),
  strategy TEXT NOT NULL CHECK (strategy IN ('exhaustive', 'random', 'anneal', 'surrogate')),
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
  finished_at TEXT,
  budget_seconds REAL NOT NULL DEFAULT 0 CHECK (budget_seconds >= 0),
  env_load_average TEXT NOT NULL DEFAULT '',  -- /proc/loadavg 1/5/15 min at the start
  env_affinity TEXT NOT NULL DEFAULT '',      -- CPU list, e.g. 0-1
  env_governor TEXT NOT NULL DEFAULT '',      -- cpufreq scaling governor of cpu0
  env_compiler TEXT NOT NULL DEFAULT '',
  env_build_flags TEXT NOT NULL DEFAULT ''
);

INSERT INTO sweeps_new (id, kernel, dtype, hardware_id, threads, strategy, budget, seed, shapes, status,
                        progress_done, progress_total, error, bucket_version, tool_version, created_at,
                        started_at, finished_at)
  SELECT id, kernel, dtype, hardware_id, threads, strategy, budget, seed, shapes, status,
         progress_done, progress_total, error, bucket_version, tool_version, created_at,
         started_at, finished_at
  FROM sweeps;

DROP TABLE sweeps;
ALTER TABLE sweeps_new RENAME TO sweeps;
CREATE INDEX sweeps_by_status ON sweeps (status, id);

-- The decision round of each bucket (tuner::FinalRound): the search's best configs and the
-- incumbent re-timed interleaved, which one was chosen and why. A resumed sweep repeats the
-- round and replaces its rows.
CREATE TABLE final_rounds (
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id),
  bucket TEXT NOT NULL,
  config TEXT NOT NULL,
  position INTEGER NOT NULL,  -- order timed; the incumbent, when it took part, last
  is_incumbent INTEGER NOT NULL CHECK (is_incumbent IN (0, 1)),
  chosen INTEGER NOT NULL CHECK (chosen IN (0, 1)),
  outcome TEXT NOT NULL CHECK (outcome IN ('ok', 'invalid', 'crashed', 'timeout', 'out_of_memory', 'nan',
                                           'wrong_result', 'unstable', 'worker_lost')),
  iterations INTEGER NOT NULL DEFAULT 0,
  repetitions INTEGER NOT NULL DEFAULT 0,
  median_ns REAL,
  cv REAL,
  noise_band REAL NOT NULL,
  decision TEXT NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY (sweep_id, bucket, config)
) WITHOUT ROWID;
