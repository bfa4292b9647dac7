-- 0014: where a sweep's wall time went (issue 22). One row per sweep that ran here, the sum
-- over its tasks and resumed runs of tuner::SweepBreakdown: the engine's wall clock, the
-- evaluator's phases (timed repetitions, calibration, discarded noisy attempts, verification,
-- reference outputs, input set-up, worker starts, the channel, requests lost to a crash or
-- timeout), the store and the search. Efficiency is timed_s / wall_s; the codec derives it.
-- Append-only: a later change is a new numbered file, never an edit of this one.
CREATE TABLE sweep_breakdowns (
  sweep_id INTEGER PRIMARY KEY REFERENCES sweeps (id),
  wall_s REAL NOT NULL DEFAULT 0,
  timed_s REAL NOT NULL DEFAULT 0,
  calibrate_s REAL NOT NULL DEFAULT 0,
  retry_s REAL NOT NULL DEFAULT 0,
  verify_s REAL NOT NULL DEFAULT 0,
  reference_s REAL NOT NULL DEFAULT 0,
  setup_s REAL NOT NULL DEFAULT 0,
  spawn_s REAL NOT NULL DEFAULT 0,
  transport_s REAL NOT NULL DEFAULT 0,
  lost_s REAL NOT NULL DEFAULT 0,
  store_s REAL NOT NULL DEFAULT 0,
  search_s REAL NOT NULL DEFAULT 0,
  decision_s REAL NOT NULL DEFAULT 0,
  measured INTEGER NOT NULL DEFAULT 0,
  spawns INTEGER NOT NULL DEFAULT 0,
  retries INTEGER NOT NULL DEFAULT 0
);
-- The other hardware profiles a transfer search drew its prior from (tuner/search/
-- profile_prior.h), with how alike their landscapes were measured to be: Spearman correlation
-- over `shared` configs of buckets both measured, and the log weight that gave them.
CREATE TABLE sweep_prior_profiles (
  sweep_id INTEGER NOT NULL REFERENCES sweeps (id),
  hardware_key TEXT NOT NULL,
  correlation REAL NOT NULL,
  shared INTEGER NOT NULL,
  log_weight REAL NOT NULL,
  PRIMARY KEY (sweep_id, hardware_key)
);
