// The data files against the JSON Schemas in schema/, with ajv (JSON Schema 2020-12, pinned in
// tests/contract/package-lock.json):
//   - every schema/*.schema.json compiles in ajv's strict mode (an unknown keyword or a
//     dangling $ref is an error, not a silently ignored constraint);
//   - every line of tables/tuned_entries.jsonl against tuned-entry.schema.json;
//   - every generated tables/json/*_tuned_block_sizes.json against tuned-table.schema.json;
//   - every spec file under examples/ that names kernel-spec.schema.json as its $schema;
//   - and that the checks can fail: a few rows broken on purpose must each be refused.
// Prints one line per invalid item and a count per kind; exits 1 on any failure.
// Usage: node validate.mjs SOURCE_DIR
import { readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const Ajv2020 = require("ajv/dist/2020").default;

const root = process.argv[2];
if (!root) {
  console.error("usage: node validate.mjs SOURCE_DIR");
  process.exit(2);
}
const schemaDir = join(root, "schema");
let failures = 0;
function fail(msg) {
  failures++;
  console.log(`INVALID ${msg}`);
}
function errorsOf(validate) {
  return validate.errors.slice(0, 3).map((e) => `${e.instancePath || "/"} ${e.message}` +
    (e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : "")).join("; ");
}

// strict: true refuses unknown keywords and ambiguous types; allowUnionTypes lets a schema say
// "type": ["integer", "string"], which 2020-12 allows.
const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
const schemas = {};
for (const name of readdirSync(schemaDir).filter((n) => n.endsWith(".schema.json")).sort()) {
  const schema = JSON.parse(readFileSync(join(schemaDir, name), "utf8"));
  ajv.addSchema(schema);  // by its $id: tuned-table's "tuned-entry.schema.json#/$defs/..." refs resolve
  schemas[name] = schema.$id;
}
const validators = {};
for (const [name, id] of Object.entries(schemas)) {
  try {
    validators[name] = ajv.getSchema(id);
    if (!validators[name]) fail(`schema/${name}: no $id`);
  } catch (e) {
    fail(`schema/${name}: does not compile: ${e.message}`);
  }
}
for (const need of ["tuned-entry.schema.json", "tuned-table.schema.json", "kernel-spec.schema.json"]) {
  if (!validators[need]) {
    fail(`schema/${need}: missing`);
    process.exit(1);
  }
}
console.log(`${Object.keys(validators).length} schemas compile: ${Object.keys(validators).join(", ")}`);

// tables/tuned_entries.jsonl, one row per line.
const row = validators["tuned-entry.schema.json"];
const jsonl = readFileSync(join(root, "tables", "tuned_entries.jsonl"), "utf8").split("\n");
let rows = 0;
let firstRow = null;
for (const [i, line] of jsonl.entries()) {
  if (line.trim() === "") continue;
  let value;
  try {
    value = JSON.parse(line);
  } catch {
    fail(`tables/tuned_entries.jsonl:${i + 1}: not JSON`);
    continue;
  }
  rows++;
  firstRow ??= value;
  if (!row(value)) fail(`tables/tuned_entries.jsonl:${i + 1}: ${errorsOf(row)}`);
}
console.log(`${rows} rows of tables/tuned_entries.jsonl checked`);
if (rows === 0) fail("tables/tuned_entries.jsonl: no rows");

// The generated JSON tables.
const table = validators["tuned-table.schema.json"];
const tableDir = join(root, "tables", "json");
const tables = readdirSync(tableDir).filter((n) => n.endsWith("_tuned_block_sizes.json")).sort();
for (const name of tables) {
  const value = JSON.parse(readFileSync(join(tableDir, name), "utf8"));
  if (!table(value)) fail(`tables/json/${name}: ${errorsOf(table)}`);
}
console.log(`${tables.length} tables of tables/json checked`);
if (tables.length === 0) fail("tables/json: no tables");

// Spec files that declare the kernel spec schema.
const spec = validators["kernel-spec.schema.json"];
let specs = 0;
function walk(dir) {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (name === "node_modules" || name.startsWith(".")) continue;
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith(".json")) {
      const value = JSON.parse(readFileSync(path, "utf8"));
      if (typeof value.$schema !== "string" || !value.$schema.endsWith("/schema/kernel-spec.schema.json")) continue;
      specs++;
      if (!spec(value)) fail(`${relative(root, path)}: ${errorsOf(spec)}`);
    }
  }
}
walk(join(root, "examples"));
console.log(`${specs} kernel spec files under examples/ checked`);
if (specs === 0) fail("examples/: no spec file names schema/kernel-spec.schema.json");

// The checks can fail: each of these rows breaks one rule and must be refused.
if (firstRow) {
  const broken = {
    "dtype f64": { ...firstRow, dtype: "f64" },
    "config value a string": { ...firstRow, config: { ...firstRow.config, [Object.keys(firstRow.config)[0]]: "64" } },
    "config missing": Object.fromEntries(Object.entries(firstRow).filter(([k]) => k !== "config")),
    "unknown key": { ...firstRow, gates: {} },
    "fingerprint not hex": { ...firstRow, fingerprint: "XYZ" },
    "measured_at not UTC": { ...firstRow, measured_at: "2026-11-25 07:22:53" },
    "hardware with a space": { ...firstRow, hardware: "x86_64 avx2" },
    "gate decision unknown": { ...firstRow, gate: { decision: "maybe" } },
  };
  for (const [what, value] of Object.entries(broken)) {
    if (row(value)) fail(`tuned-entry.schema.json accepts a broken row (${what})`);
  }
  console.log(`${Object.keys(broken).length} broken rows refused`);
}

console.log(failures === 0 ? "schemas: all valid" : `schemas: ${failures} failure(s)`);
process.exit(failures === 0 ? 0 : 1);
