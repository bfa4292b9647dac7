-- 0016: device keys (issue 38, docs/accelerators.md). A sweep of an external kernel is filed
-- under the device its runner announces (gpu.nvidia.sm90.h200, tpu.google.v5e) and keeps the
-- runner's whole identity as provenance: sweeps.device, the identity as JSON ('' for a sweep
-- whose runner announced nothing, a built-in kernel's, and every sweep before this migration).
-- Append-only: a later change is a new numbered file, never an edit of this one.
ALTER TABLE sweeps ADD COLUMN device TEXT NOT NULL DEFAULT '';

-- Keys imports wrote before device keys, <platform>.<vendor>.<device> with platform cuda, hip
-- or opencl, become device keys in every table that holds a key: cuda.nvidia.geforce_rtx_2080_ti
-- -> gpu.nvidia.sm75.rtx_2080_ti, hip.amd.instinct_mi250x -> gpu.amd.gfx90a.mi250x, an
-- override's cuda.nvidia -> gpu.nvidia. blocktune_legacy_device_key() is
-- tuner::LegacyDeviceKey (tuner/device_models.h), defined on the connection by the migration
-- code; NULL for every other key. Two old keys may make one new key (an A100 PCIe and an A100
-- SXM4 are both gpu.nvidia.sm80.a100): their profiles become one, and where two rows would
-- collide the faster tuned row (the newer pin, the first counted miss) is kept.
CREATE TEMP TABLE legacy_keys AS
  SELECT DISTINCT hardware_key AS old_key, blocktune_legacy_device_key(hardware_key) AS new_key
  FROM (SELECT hardware_key FROM hardware_profiles UNION SELECT hardware_key FROM tuned_entries
        UNION SELECT hardware_key FROM overrides UNION SELECT hardware_key FROM lookup_misses
        UNION SELECT hardware_key FROM sweep_prior_profiles)
  WHERE blocktune_legacy_device_key(hardware_key) IS NOT NULL;

INSERT INTO hardware_profiles (hardware_key, arch, isa, vendor, cpu_family, cpu_model, model_name, cores, l1d_bytes,
                               l2_bytes, l3_bytes, threads, first_seen_at)
  SELECT k.new_key, h.arch, h.isa, h.vendor, h.cpu_family, h.cpu_model, h.model_name, h.cores, h.l1d_bytes,
         h.l2_bytes, h.l3_bytes, h.threads, MIN(h.first_seen_at)
  FROM hardware_profiles h JOIN legacy_keys k ON k.old_key = h.hardware_key
  WHERE k.new_key NOT IN (SELECT hardware_key FROM hardware_profiles)
  GROUP BY k.new_key;
UPDATE sweeps SET hardware_id = (SELECT n.id FROM hardware_profiles o JOIN legacy_keys k ON k.old_key = o.hardware_key
                                 JOIN hardware_profiles n ON n.hardware_key = k.new_key WHERE o.id = sweeps.hardware_id)
  WHERE hardware_id IN (SELECT h.id FROM hardware_profiles h JOIN legacy_keys k ON k.old_key = h.hardware_key);
DELETE FROM hardware_profiles WHERE hardware_key IN (SELECT old_key FROM legacy_keys);

-- Tuned rows: of the rows that meet under one new key, the fastest (then the first) stays.
DELETE FROM tuned_entries AS t
  WHERE t.hardware_key IN (SELECT old_key FROM legacy_keys) AND EXISTS (
    SELECT 1 FROM tuned_entries u LEFT JOIN legacy_keys ku ON ku.old_key = u.hardware_key
    WHERE u.kernel = t.kernel AND u.dtype = t.dtype AND u.bucket = t.bucket AND u.rowid != t.rowid
      AND COALESCE(ku.new_key, u.hardware_key) = (SELECT new_key FROM legacy_keys WHERE old_key = t.hardware_key)
      AND (u.median_ns < t.median_ns OR (u.median_ns = t.median_ns AND u.rowid < t.rowid)));
UPDATE OR REPLACE tuned_entries SET hardware_key = (SELECT new_key FROM legacy_keys WHERE old_key = hardware_key)
  WHERE hardware_key IN (SELECT old_key FROM legacy_keys);

-- Pins: the newest stays where two meet.
DELETE FROM overrides AS o
  WHERE o.hardware_key IN (SELECT old_key FROM legacy_keys) AND EXISTS (
    SELECT 1 FROM overrides u LEFT JOIN legacy_keys ku ON ku.old_key = u.hardware_key
    WHERE u.kernel = o.kernel AND u.dtype = o.dtype AND u.bucket = o.bucket AND u.id > o.id
      AND COALESCE(ku.new_key, u.hardware_key) = (SELECT new_key FROM legacy_keys WHERE old_key = o.hardware_key));
UPDATE OR REPLACE overrides SET hardware_key = (SELECT new_key FROM legacy_keys WHERE old_key = hardware_key)
  WHERE hardware_key IN (SELECT old_key FROM legacy_keys);

-- Misses (lookups asked for a legacy key): where two meet, the first counted stays.
DELETE FROM lookup_misses AS m
  WHERE m.hardware_key IN (SELECT old_key FROM legacy_keys) AND EXISTS (
    SELECT 1 FROM lookup_misses u LEFT JOIN legacy_keys ku ON ku.old_key = u.hardware_key
    WHERE u.kernel = m.kernel AND u.dtype = m.dtype AND u.bucket = m.bucket AND u.id < m.id
      AND COALESCE(ku.new_key, u.hardware_key) = (SELECT new_key FROM legacy_keys WHERE old_key = m.hardware_key));
UPDATE OR REPLACE lookup_misses SET hardware_key = (SELECT new_key FROM legacy_keys WHERE old_key = hardware_key)
  WHERE hardware_key IN (SELECT old_key FROM legacy_keys);

-- The profiles a transfer search drew on: one per key and sweep.
DELETE FROM sweep_prior_profiles AS p
  WHERE p.hardware_key IN (SELECT old_key FROM legacy_keys) AND EXISTS (
    SELECT 1 FROM sweep_prior_profiles u LEFT JOIN legacy_keys ku ON ku.old_key = u.hardware_key
    WHERE u.sweep_id = p.sweep_id AND u.hardware_key < p.hardware_key
      AND COALESCE(ku.new_key, u.hardware_key) = (SELECT new_key FROM legacy_keys WHERE old_key = p.hardware_key));
UPDATE OR REPLACE sweep_prior_profiles SET hardware_key = (SELECT new_key FROM legacy_keys WHERE old_key = hardware_key)
  WHERE hardware_key IN (SELECT old_key FROM legacy_keys);

DROP TABLE legacy_keys;
