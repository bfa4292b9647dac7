// Contract test: every HTTP exchange recorded by blocktuned --exchange-log (JSON lines) is
// checked against the OpenAPI document the daemon serves, with ajv (JSON Schema 2020-12, the
// dialect of OpenAPI 3.1):
//   - the request is matched to an operation by method and path template, independently of
//     the server's own routing;
//   - the response status must be documented for that operation (exactly, or by its 4XX/5XX
//     range), its Content-Type must be the documented one, and a JSON body must validate
//     against that status's schema: success bodies and error bodies alike;
//   - a request the server accepted (2xx) must itself be valid: its JSON body against the
//     operation's request schema, each query parameter declared (or a kernel dimension where
//     the operation says so) and of the declared type, required ones present;
//   - an exchange matching no operation must be a 4xx with the Error body;
//   - every operation of the document must appear at least once.
// Prints one line per mismatch, per-operation counts, and "N exchanges validated, M
// mismatches"; exits 1 on any mismatch, on an uncovered operation, or on no exchanges.
// Usage: node validate.mjs OPENAPI_JSON EXCHANGES.jsonl...
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const Ajv2020 = require("ajv/dist/2020").default;

const [docPath, ...logPaths] = process.argv.slice(2);
if (!docPath || logPaths.length === 0) {
  console.error("usage: node validate.mjs OPENAPI_JSON EXCHANGES.jsonl...");
  process.exit(2);
}
const doc = JSON.parse(readFileSync(docPath, "utf8"));

// The component schemas under one id, so "#/components/schemas/X" refs resolve inside it.
// strict: false because OpenAPI adds no keywords ajv would reject here, but descriptions on
// $ref siblings are legal in 2020-12 and we do not want ajv's strict-mode opinions on them.
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema({ $id: "openapi", components: doc.components });
const validators = new Map();
function validatorFor(schema) {
  const key = JSON.stringify(schema);
  if (!validators.has(key)) {
    const resolved = schema.$ref ? { $ref: "openapi" + schema.$ref } : schema;
    validators.set(key, ajv.compile(resolved));
  }
  return validators.get(key);
}

// Operations with a matcher per path template: {id} and other {name}s match one segment.
const operations = [];
for (const [template, item] of Object.entries(doc.paths)) {
  const pattern = new RegExp("^" + template.replace(/\{[^}]+\}/g, "([^/]+)") + "$");
  for (const [method, op] of Object.entries(item)) {
    operations.push({ method: method.toUpperCase(), template, pattern, op, count: 0 });
  }
}
const errorSchema = { $ref: "#/components/schemas/Error" };

function mediaType(contentType) {
  return (contentType || "").split(";")[0].trim().toLowerCase();
}

function checkSchema(schema, text, what, problems, { bom = false } = {}) {
  let body;
  try {
    // RFC 8259 section 8.1: a parser MAY ignore a leading byte order mark, and the daemon's
    // (nlohmann) does; so a request with one is still the JSON text after it.
    body = JSON.parse(bom && text.startsWith("\uFEFF") ? text.slice(1) : text);
  } catch {
    problems.push(`${what}: body is not JSON: ${text.slice(0, 120)}`);
    return;
  }
  const validate = validatorFor(schema);
  if (!validate(body)) {
    const errs = validate.errors.slice(0, 3).map((e) => `${e.instancePath || "/"} ${e.message}` +
      (e.params && e.params.additionalProperty ? ` (${e.params.additionalProperty})` : ""));
    problems.push(`${what}: ${errs.join("; ")}`);
  }
}

function checkParam(param, values, problems) {
  if (values.length > 1) return;  // the server refuses repeats; only an accepted request gets here
  const v = values[0];
  const s = param.schema.$ref ? doc.components.schemas[param.schema.$ref.split("/").pop()] : param.schema;
  if (s.type === "integer") {
    if (!/^-?\d+$/.test(v)) problems.push(`query ${param.name}=${v} is not an integer`);
    else if (s.minimum !== undefined && Number(v) < s.minimum) problems.push(`query ${param.name}=${v} below minimum`);
    else if (s.maximum !== undefined && Number(v) > s.maximum) problems.push(`query ${param.name}=${v} above maximum`);
  }
  if (s.enum && !s.enum.includes(v)) problems.push(`query ${param.name}=${v} not in ${s.enum.join(",")}`);
}

let total = 0;
let mismatches = 0;
let unmatched = 0;
let truncated = 0;
const byStatusClass = {};

for (const logPath of logPaths) {
  const lines = readFileSync(logPath, "utf8").split("\n").filter((l) => l.length > 0);
  for (const [lineNo, line] of lines.entries()) {
    let ex;
    try {
      ex = JSON.parse(line);
    } catch {
      // Only a final line cut short by a killed daemon is tolerated.
      if (lineNo === lines.length - 1) { truncated++; continue; }
      console.log(`MISMATCH ${logPath}:${lineNo + 1}: not a JSON line`);
      mismatches++;
      continue;
    }
    total++;
    const cls = `${Math.floor(ex.status / 100)}xx`;
    byStatusClass[cls] = (byStatusClass[cls] || 0) + 1;
    const where = `${logPath.split("/").pop()}:${lineNo + 1} ${ex.method} ${ex.path}${ex.query ? "?" + ex.query : ""} -> ${ex.status}`;
    const problems = [];
    const method = ex.method === "HEAD" ? "GET" : ex.method;
    const found = operations.find((o) => o.method === method && o.pattern.test(ex.path));
    if (!found) {
      unmatched++;
      if (ex.status < 400 || ex.status >= 500) problems.push("no operation matches, yet the status is not 4xx");
      else if (ex.response_body) checkSchema(errorSchema, ex.response_body, "error body", problems);
    } else {
      found.count++;
      const op = found.op;
      const responses = op.responses || {};
      const documented = responses[String(ex.status)] || responses[`${String(ex.status)[0]}XX`] || responses.default;
      if (!documented) {
        problems.push(`status ${ex.status} is not documented for ${op.operationId}`);
      } else if (ex.method !== "HEAD") {
        const content = documented.content || {};
        const type = mediaType(ex.response_content_type);
        if (!content[type]) {
          problems.push(`Content-Type '${type}' is not documented for ${op.operationId} ${ex.status}`);
        } else if (type === "application/json") {
          checkSchema(content[type].schema, ex.response_body, `${op.operationId} ${ex.status} response`, problems);
        }
      }
      if (ex.status >= 200 && ex.status < 300) {
        // The server accepted the request: it must be one the document allows.
        const query = new URLSearchParams(ex.query || "");
        const params = (op.parameters || []).filter((p) => p.in === "query");
        const openQuery = op["x-kernel-dims-in-query"] === true;
        for (const name of new Set(query.keys())) {
          const param = params.find((p) => p.name === name);
          if (param) checkParam(param, query.getAll(name), problems);
          else if (!openQuery) problems.push(`query parameter '${name}' is not documented`);
          else if (!/^-?\d+$/.test(query.get(name))) problems.push(`dimension ${name} is not an integer`);
        }
        for (const p of params) {
          if (p.required && !query.has(p.name)) problems.push(`required query parameter '${p.name}' missing`);
        }
        if (op.requestBody) {
          const schema = op.requestBody.content["application/json"].schema;
          checkSchema(schema, ex.request_body || "", `${op.operationId} request`, problems, { bom: true });
        } else if (ex.request_body) {
          problems.push(`${op.operationId} takes no body, yet one was accepted`);
        }
        if (op.security && op.security.length > 0 && !ex.authorization) {
          problems.push(`${op.operationId} needs the token, yet succeeded without one`);
        }
      }
    }
    if (problems.length > 0) {
      mismatches++;
      console.log(`MISMATCH ${where}: ${problems.join(" | ")}`);
    }
  }
}

console.log("exchanges per operation:");
let uncovered = 0;
for (const o of operations) {
  console.log(`  ${String(o.count).padStart(6)}  ${o.op.operationId} (${o.method} ${o.template})`);
  if (o.count === 0) uncovered++;
}
console.log(`  ${String(unmatched).padStart(6)}  (no operation: 4xx answers to unknown routes or methods)`);
console.log(`by status: ${Object.entries(byStatusClass).sort().map(([k, v]) => `${k} ${v}`).join(", ")}`);
if (truncated > 0) console.log(`${truncated} final line(s) cut short by a killed daemon, skipped`);
console.log(`${total} exchanges validated, ${mismatches} mismatches, ${uncovered} operations not exercised`);
if (total === 0 || mismatches > 0 || uncovered > 0) process.exit(1);
