// Validates the pod-level parts of deploy/kserve's manifests against the
// Kubernetes API's OpenAPI schemas, offline, with kubernetes-models (npm):
// each ServingRuntime container as a core/v1 Container, its volumes as
// Volumes, and every object's metadata as ObjectMeta. KServe's own fields
// (supportedModelFormats, protocolVersions, predictor.model) have no schema
// package here: tests/deploy/kserve_manifests_test.py checks those.
// Usage: node validate.js MANIFEST_DIR
"use strict";
const fs = require("fs");
const path = require("path");
let yaml, Container, Volume, ObjectMeta;
try {
  yaml = require("js-yaml");
  ({ Container } = require("kubernetes-models/v1/Container"));
  ({ Volume } = require("kubernetes-models/v1/Volume"));
  ({ ObjectMeta } = require("@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta"));
} catch (error) {
  console.error(`FAIL: ${error.message.split("\n")[0]}: run scripts/setup.sh (npm ci in tests/deploy/manifest_schema)`);
  process.exit(1);
}

function check(label, Model, value) {
  try {
    new Model(value).validate();
    return null;
  } catch (error) {
    return `${label}: ${error.message}`;
  }
}

// Every schema check of one manifest document: a list of failures.
function validateDocument(file, doc) {
  const failures = [];
  const name = `${file} ${doc.kind}/${doc.metadata && doc.metadata.name}`;
  failures.push(check(`${name} metadata`, ObjectMeta, doc.metadata));
  if (doc.kind === "ServingRuntime" || doc.kind === "ClusterServingRuntime") {
    const spec = doc.spec || {};
    if (!Array.isArray(spec.containers) || spec.containers.length === 0) failures.push(`${name}: no containers`);
    (spec.containers || []).forEach((c, i) => failures.push(check(`${name} containers[${i}]`, Container, c)));
    (spec.volumes || []).forEach((v, i) => failures.push(check(`${name} volumes[${i}]`, Volume, v)));
  }
  return failures.filter((f) => f !== null);
}

function main(directory) {
  const files = fs.readdirSync(directory).filter((f) => f.endsWith(".yaml")).sort();
  if (files.length === 0) throw new Error(`no .yaml under ${directory}`);
  let failures = [];
  let runtimes = 0;
  for (const file of files) {
    for (const doc of yaml.loadAll(fs.readFileSync(path.join(directory, file), "utf8"))) {
      if (!doc) continue;
      failures = failures.concat(validateDocument(file, doc));
      if (doc.kind === "ServingRuntime") {
        runtimes += 1;
        // The validator must see a broken container as broken, or a pass means nothing.
        const broken = JSON.parse(JSON.stringify(doc));
        broken.spec.containers[0].securityContext = { runAsUser: "root", capabilities: { drop: "ALL" } };
        if (validateDocument(file, broken).length === 0)
          failures.push(`${file}: a container with runAsUser "root" passed validation: the schema check is not working`);
      }
    }
  }
  if (runtimes === 0) failures.push(`no ServingRuntime under ${directory}`);
  if (failures.length > 0) {
    for (const f of failures) console.error("FAIL:", f);
    process.exit(1);
  }
  console.log(`${files.length} manifest files: ${runtimes} ServingRuntimes valid against the Kubernetes v1 schemas`);
}

main(process.argv[2]);
