-- 0009: lookups the tables could not answer for their own bucket and hardware key. The daemon
-- counts every lookup answered with source 'tuned_fallback', 'nearest' or 'default' in memory
-- per (kernel, dtype, hardware key asked for, bucket) and adds the counts here in batches (every
-- few seconds and at shutdown), so GET /v1/misses can rank the buckets worth sweeping.
-- Append-only: a later change is a new numbered file, never an edit of this one.
CREATE TABLE lookup_misses (
  id INTEGER PRIMARY KEY,
  kernel TEXT NOT NULL,
  dtype TEXT NOT NULL,
  hardware_key TEXT NOT NULL,  -- the key the lookups asked for, not the key of the row that answered
  bucket TEXT NOT NULL,
  dims TEXT NOT NULL,          -- canonical dims of the first problem counted in this bucket
  fallback_count INTEGER NOT NULL DEFAULT 0 CHECK (fallback_count >= 0),  -- source tuned_fallback
  nearest_count INTEGER NOT NULL DEFAULT 0 CHECK (nearest_count >= 0),    -- source nearest
  default_count INTEGER NOT NULL DEFAULT 0 CHECK (default_count >= 0),    -- source default
  count INTEGER NOT NULL DEFAULT 0 CHECK (count = fallback_count + nearest_count + default_count),
  first_seen_at TEXT NOT NULL,  -- UTC, the first counted lookup
  last_seen_at TEXT NOT NULL,   -- UTC, the latest counted lookup
  UNIQUE (kernel, dtype, hardware_key, bucket)
);
-- GET /v1/misses: most missed first.
CREATE INDEX lookup_misses_by_count ON lookup_misses (count DESC, id);
