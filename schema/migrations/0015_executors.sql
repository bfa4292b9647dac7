-- 0015: many processes, one database (issue 40). Every process that runs sweeps on this file
-- (a blocktuned, a `blocktune sweep --local`, `adapt --local`, an import) is an executor with a
-- row here, and a sweep belongs to at most one executor at a time (sweeps.owner): only the owner
-- leases the sweep's tasks and commits its measurements, each commit checking the owner in its
-- own transaction. An executor renews its row while it holds unfinished sweeps; another one
-- takes a sweep over (keeping every measurement committed) once the owner's row expired, is
-- gone, or names a process of this machine that no longer exists.
-- Append-only: a later change is a new numbered file, never an edit of this one.
CREATE TABLE executors (
  id TEXT PRIMARY KEY,         -- 128 random bits (hex), made when the process starts its runner
  kind TEXT NOT NULL,          -- 'daemon', 'local' or 'import'
  host TEXT NOT NULL,          -- gethostname
  boot_id TEXT NOT NULL,       -- /proc/sys/kernel/random/boot_id ('' where unreadable)
  pid INTEGER NOT NULL,
  pid_start INTEGER NOT NULL,  -- /proc/PID/stat starttime (clock ticks after boot): a reused pid differs
  started_at TEXT NOT NULL,
  expires_ms INTEGER NOT NULL  -- Unix time in ms; the claim lapses after it unless renewed
) WITHOUT ROWID;

-- The executor that runs the sweep (executors.id); NULL: any daemon may claim it (sweeps made
-- before this migration, or released by an executor that stopped cleanly).
ALTER TABLE sweeps ADD COLUMN owner TEXT;
CREATE INDEX sweeps_by_owner ON sweeps (owner, status);
