-- 0008: sweeps.strategy loses its CHECK. 0005 and 0007 each rebuilt the whole table only to
-- widen the list of strategy names; the names are now validated in C++ from the one list,
-- tuner::kStrategyNames (tuner/measurement.h), when a sweep is written and when it is read
-- (schema/store.cc), so a new strategy needs no migration. This is the last such rebuild, done
-- as in 0007 (new table with every column, copy, drop, rename, recreate the index;
-- schema/migrate.cc keeps foreign keys off and checks them before its COMMIT, so every id and
-- every reference survives).
CREATE TABLE sweeps_new (
  id INTEGER PRIMARY KEY,
  kernel TEXT NOT NULL,
  dtype TEXT NOT NULL,
  hardware_id INTEGER NOT NULL REFERENCES hardware_profiles (id),
  threads INTEGER NOT NULL CHECK (threads >= 1),
  strategy TEXT NOT NULL,  -- a tuner::kStrategyNames entry, checked by the store
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
                        started_at, finished_at, budget_seconds, env_load_average, env_affinity,
                        env_governor, env_compiler, env_build_flags)
  SELECT id, kernel, dtype, hardware_id, threads, strategy, budget, seed, shapes, status,
         progress_done, progress_total, error, bucket_version, tool_version, created_at,
         started_at, finished_at, budget_seconds, env_load_average, env_affinity,
         env_governor, env_compiler, env_build_flags
  FROM sweeps;

DROP TABLE sweeps;
ALTER TABLE sweeps_new RENAME TO sweeps;
CREATE INDEX sweeps_by_status ON sweeps (status, id);
