// Validates Kubernetes objects (a JSON array on stdin, as rendered by `kubectl kustomize`) against
// the Kubernetes and prometheus-operator schemas of the npm packages kubernetes-models and
// @kubernetes-models/prometheus-operator, and detects unknown fields, which those schemas let pass
// (the API server drops or rejects them: a misspelt field silently does nothing). A field is known
// when its schema constrains it: replacing its value with a JavaScript Symbol (no JSON type) then
// fails validation at exactly that path. Exits 1 when any object is invalid, has an unknown field,
// or is of a kind without a schema. `--self-test` checks that bad objects are caught.
import { readFileSync } from "node:fs";

async function modelFor(obj) {
  const [group, version] = obj.apiVersion.includes("/") ? obj.apiVersion.split("/") : ["", obj.apiVersion];
  const module = group === "monitoring.coreos.com"
    ? `@kubernetes-models/prometheus-operator/${group}/${version}`
    : `kubernetes-models/${group ? group + "/" : ""}${version}`;
  try {
    return (await import(module))[obj.kind];
  } catch {
    return undefined;
  }
}

function errorsOf(Model, obj) {
  try {
    new Model(obj).validate();
    return [];
  } catch (e) {
    if (!e.errors) throw e;
    return e.errors;
  }
}

const pointer = (path) => path.map((k) => String(k).replace(/~/g, "~0").replace(/\//g, "~1"))
  .map((k) => "/" + k).join("");

// Paths (JSON pointers) of the fields no schema constrains.
function unknownFields(Model, obj) {
  const unknown = [];
  const walk = (value, path) => {
    if (Array.isArray(value)) {
      value.forEach((v, i) => walk(v, [...path, i]));
      return;
    }
    if (value === null || typeof value !== "object") return;
    for (const key of Object.keys(value)) {
      const probe = structuredClone(obj);
      let at = probe;
      for (const p of path) at = at[p];
      at[key] = Symbol("probe");
      const where = pointer([...path, key]);
      if (!errorsOf(Model, probe).some((e) => e.instancePath === where)) {
        unknown.push(where);
        continue;  // nothing below an unknown field is checked either
      }
      walk(value[key], [...path, key]);
    }
  };
  walk(obj, []);
  return unknown;
}

// Fields the API has but the generated schemas lost (kubernetes-models 5.1: PriorityClass's
// top-level "description" is missing, its name clashing with JSON Schema's keyword).
const SCHEMA_GAPS = {"scheduling.k8s.io/v1/PriorityClass": ["/description"]};

async function check(obj) {
  const Model = await modelFor(obj);
  if (!Model) return ["no schema for this kind"];
  const errors = errorsOf(Model, obj).map((e) => `${e.instancePath} ${e.message}`);
  const gaps = SCHEMA_GAPS[`${obj.apiVersion}/${obj.kind}`] ?? [];
  const unknown = unknownFields(Model, obj).filter((p) => !gaps.includes(p));
  return [...errors, ...unknown.map((p) => `${p}: unknown field`)];
}

if (process.argv.includes("--self-test")) {
  const good = {apiVersion: "apps/v1", kind: "DaemonSet", metadata: {name: "x", labels: {a: "b"}},
    spec: {selector: {matchLabels: {a: "b"}}, template: {metadata: {labels: {a: "b"}},
      spec: {containers: [{name: "c", image: "i", resources: {limits: {"nvidia.com/gpu": 1}}}]}}}};
  const typo = structuredClone(good);
  typo.spec.template.spec.containers[0].imagePullPolicyy = "Always";
  const wrongType = structuredClone(good);
  wrongType.spec.template.spec.containers[0].ports = "50051";
  const smTypo = {apiVersion: "monitoring.coreos.com/v1", kind: "ServiceMonitor",
    metadata: {name: "x"}, spec: {selector: {}, endpoints: [{port: "m", intervall: "30s"}]}};
  const results = [await check(good), await check(typo), await check(wrongType), await check(smTypo)];
  const ok = results[0].length === 0 && results.slice(1).every((r) => r.length > 0);
  console.log(JSON.stringify(results));
  console.log(ok ? "self-test ok: valid object passes; typo, wrong type, CRD typo rejected" : "self-test FAILED");
  process.exit(ok ? 0 : 1);
}

const objects = JSON.parse(readFileSync(0, "utf8"));
let failures = 0;
for (const obj of objects) {
  const what = `${obj.kind}/${obj.metadata?.name ?? "?"} (${obj.apiVersion})`;
  const problems = await check(obj);
  if (problems.length) failures++;
  console.log(problems.length ? `FAIL ${what}: ${problems.join("; ")}` : `ok   ${what}`);
}
console.log(`${objects.length - failures}/${objects.length} objects valid`);
process.exit(failures ? 1 : 0);
