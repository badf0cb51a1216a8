// Validates the pod-level parts of deploy/kserve's manifests against the
// Kubernetes API's OpenAPI schemas, offline, with kubernetes-models (npm):
// each ServingRuntime container as a core/v1 Container, its volumes as
// Volumes, the pod fields of a ServingRuntime (nodeSelector, affinity,
// tolerations, imagePullSecrets) and of an InferenceService's predictor
// (those and runtimeClassName: the GPU variants' scheduling) as a PodSpec's,
// a predictor model's resources as ResourceRequirements, and every object's
// metadata as ObjectMeta. KServe's own fields (supportedModelFormats,
// protocolVersions, predictor.model) have no schema package here:
// tests/deploy/kserve_manifests_test.py checks those.
// Usage: node validate.js MANIFEST_DIR
"use strict";
const fs = require("fs");
const path = require("path");
let yaml, Container, Volume, PodSpec, ResourceRequirements, ObjectMeta;
try {
  yaml = require("js-yaml");
  ({ Container } = require("kubernetes-models/v1/Container"));
  ({ Volume } = require("kubernetes-models/v1/Volume"));
  ({PodSpec} = require('kubernetes-models/v1/PodSpec'));
  ({ResourceRequirements} = require('kubernetes-models/v1/ResourceRequirements'));
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

// The pod-level fields of `spec` named in `fields`, as a PodSpec with a
// stand-in container (the containers are checked on their own).
function podFields(spec, fields) {
  const pod = {containers: [{name: 'pod-fields'}]};
  for (const field of fields)
    if (spec[field] !== undefined) pod[field] = spec[field];
  return pod;
}
const kRuntimePodFields = ['nodeSelector', 'affinity', 'tolerations', 'imagePullSecrets'];
const kPredictorPodFields = kRuntimePodFields.concat(['runtimeClassName', 'serviceAccountName', 'priorityClassName']);

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
    failures.push(check(`${name} pod fields`, PodSpec, podFields(spec, kRuntimePodFields)));
  }
  if (doc.kind === 'InferenceService') {
    const predictor = (doc.spec || {}).predictor;
    if (!predictor)
      failures.push(`${name}: no predictor`);
    else {
      failures.push(check(`${name} predictor pod fields`, PodSpec, podFields(predictor, kPredictorPodFields)));
      const model = predictor.model || {};
      if (model.resources !== undefined)
        failures.push(check(`${name} predictor.model.resources`, ResourceRequirements, model.resources));
    }
  }
  return failures.filter((f) => f !== null);
}

// The validator must see a broken document as broken, or a pass means nothing:
// `breaks` returns a copy of `doc` with one field of the wrong type.
function failsWhenBroken(file, doc, what, breaks) {
  const broken = breaks(JSON.parse(JSON.stringify(doc)));
  if (validateDocument(file, broken).length > 0) return null;
  return `${file} ${doc.kind}/${doc.metadata.name}: ${what} passed validation: the schema check is not working`;
}

function main(directory) {
  const files = fs.readdirSync(directory).filter((f) => f.endsWith(".yaml")).sort();
  if (files.length === 0) throw new Error(`no .yaml under ${directory}`);
  let failures = [];
  let runtimes = 0;
  let services = 0;
  for (const file of files) {
    for (const doc of yaml.loadAll(fs.readFileSync(path.join(directory, file), "utf8"))) {
      if (!doc) continue;
      failures = failures.concat(validateDocument(file, doc));
      if (doc.kind === "ServingRuntime") {
        runtimes += 1;
        failures.push(
            failsWhenBroken(
                file, doc, 'a container with runAsUser "root"',
                (d) => {
                  d.spec.containers[0].securityContext = {runAsUser: 'root', capabilities: {drop: 'ALL'}};
                  return d;
                }),
            failsWhenBroken(
                file, doc, 'a toleration whose effect is a number',
                (d) => {
                  d.spec.tolerations = [{key: 'nvidia.com/gpu', operator: 'Exists', effect: 1}];
                  return d;
                }),
        );
      }
      if (doc.kind === 'InferenceService') {
        services += 1;
        failures.push(
            failsWhenBroken(
                file, doc, 'a numeric runtimeClassName',
                (d) => {
                  d.spec.predictor.runtimeClassName = 1;
                  return d;
                }),
        );
      }
    }
  }
  if (runtimes === 0) failures.push(`no ServingRuntime under ${directory}`);
  failures = failures.filter((f) => f !== null);
  if (failures.length > 0) {
    for (const f of failures) console.error("FAIL:", f);
    process.exit(1);
  }
  console.log(
      `${files.length} manifest files: ${runtimes} ServingRuntimes and ${services} InferenceServices valid ` +
          'against the Kubernetes v1 schemas',
  );
}

main(process.argv[2]);
