-- 0017: what decided a bucket's row (issue 39). The decision round judges every candidate by
-- paired verdicts (the per-cycle ratios of two configs timed in the same interleaved rounds,
-- tuner/decision.h); the verdict that decided is kept with the round, repeated on each of its
-- rows like noise_band and decision: the config and the reference it was judged against
-- ('default', 'incumbent' or 'served'), both medians over the paired cycles, the gain (1 - the
-- median ratio), whether it beat the band (noise_band), the paired repetitions it rests on, the
-- cycles left out as disturbed (tuner/timing/paired.h) and the interleaved rounds they came from;
-- and `rounds`, the decision's rounds in all (1 + the extra
-- rounds its close verdicts got). Rounds recorded before this migration have no verdict (NULL)
-- and one round.
-- Append-only: a later change is a new numbered file, never an edit of this one.
ALTER TABLE final_rounds ADD COLUMN verdict_config TEXT;
ALTER TABLE final_rounds ADD COLUMN verdict_against TEXT;
ALTER TABLE final_rounds ADD COLUMN verdict_reference TEXT;
ALTER TABLE final_rounds ADD COLUMN verdict_config_ns REAL;
ALTER TABLE final_rounds ADD COLUMN verdict_reference_ns REAL;
ALTER TABLE final_rounds ADD COLUMN verdict_gain REAL;
ALTER TABLE final_rounds ADD COLUMN verdict_beats INTEGER;
ALTER TABLE final_rounds ADD COLUMN verdict_cycles INTEGER;
ALTER TABLE final_rounds ADD COLUMN verdict_dropped INTEGER;
ALTER TABLE final_rounds ADD COLUMN verdict_rounds INTEGER;
ALTER TABLE final_rounds ADD COLUMN rounds INTEGER NOT NULL DEFAULT 1;
