-- 0010: kernel fingerprints (docs/tables.md#staleness). Every measurement and tuned row records
-- the fingerprint of its kernel in the build that measured it: a hash of the sources that decide
-- the kernel's speed and of the compiler and flags (cmake/fingerprint.cmake). NULL for rows
-- stored before this migration: their fingerprint is unknown, and nothing pretends otherwise
-- (they are reported "unknown", not stale and not fresh). A row whose fingerprint is not the
-- running build's is stale: lookups say so and a fresh row wins over it.
-- Append-only: a later change is a new numbered file, never an edit of this one.
ALTER TABLE measurements ADD COLUMN fingerprint TEXT;
ALTER TABLE tuned_entries ADD COLUMN fingerprint TEXT;
