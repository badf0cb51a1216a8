// hetrt serve through npm's gRPC stack (@grpc/grpc-js + @grpc/proto-loader),
// the service loaded at run time from serve/proto/grpc_service.proto.
// Env: HETRT_GRPC (HOST:PORT, set by tests/serve/server_process.py),
// HETRT_FIXTURES (folder holding tvm-0.18/), HETRT_MODEL (default "mlp": the
// repository serves the mlp fixture under that name).
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const FIXTURES = process.env.HETRT_FIXTURES || path.join(REPO_ROOT, '..', 'shared', 'fixtures');
const MLP = path.join(FIXTURES, 'tvm-0.18', 'mlp');
const MODEL = process.env.HETRT_MODEL || 'mlp';

// The .npy format (version 1-3): magic, header length, a Python dict literal
// with descr/fortran_order/shape, then the data. Little-endian float32 only:
// all the fixtures use.
function readNpy(file) {
  const bytes = fs.readFileSync(file);
  assert.equal(bytes.subarray(0, 6).toString('latin1'), '\x93NUMPY', `${file}: not an .npy file`);
  const major = bytes[6];
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  const header = bytes.subarray(headerStart, headerStart + headerLength).toString('latin1');
  const descr = /'descr':\s*'([^']+)'/.exec(header);
  const fortran = /'fortran_order':\s*(True|False)/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  assert.ok(descr && fortran && shape, `${file}: unreadable header ${header}`);
  assert.equal(descr[1], '<f4', `${file}: only little-endian float32 is read here`);
  assert.equal(fortran[1], 'False', `${file}: Fortran order is not read here`);
  const dims = shape[1].split(',').map((d) => d.trim()).filter((d) => d !== '').map(Number);
  const data = bytes.subarray(headerStart + headerLength);
  const count = dims.reduce((a, b) => a * b, 1);
  assert.equal(data.length, count * 4, `${file}: ${data.length} data bytes for shape [${dims}]`);
  return { shape: dims, data: Buffer.from(data), values: floatsOf(data) };
}

function floatsOf(buffer) {
  const values = new Float32Array(buffer.length / 4);
  for (let i = 0; i < values.length; ++i) values[i] = buffer.readFloatLE(i * 4);
  return values;
}

function assertAllClose(got, expected, rtol, atol) {
  assert.equal(got.length, expected.length, 'element count');
  for (let i = 0; i < got.length; ++i) {
    const tolerance = atol + rtol * Math.abs(expected[i]);
    assert.ok(Math.abs(got[i] - expected[i]) <= tolerance, `element ${i}: ${got[i]} vs expected ${expected[i]}`);
  }
}

function call(client, method, request) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + 60000 }, (error, response) =>
      error ? reject(error) : resolve(response));
  });
}

function assertOutput(response, expected, id) {
  assert.equal(response.model_name, MODEL);
  assert.equal(response.id, id);
  assert.equal(response.outputs.length, 1);
  const output = response.outputs[0];
  assert.equal(output.name, 'output_0');
  assert.equal(output.datatype, 'FP32');
  assert.deepEqual(output.shape.map(Number), expected.shape);
  assert.equal(response.raw_output_contents.length, 1);
  assertAllClose(floatsOf(response.raw_output_contents[0]), expected.values, 1e-4, 1e-5);
}

async function main() {
  const address = process.env.HETRT_GRPC;
  assert.ok(address, 'HETRT_GRPC (HOST:PORT) is not set: run through tests/serve/server_process.py');
  const definition = protoLoader.loadSync(path.join(REPO_ROOT, 'serve', 'proto', 'grpc_service.proto'), {
    keepCase: true, longs: String, enums: String, defaults: true, oneofs: true,
  });
  const { inference } = grpc.loadPackageDefinition(definition);
  const client = new inference.GRPCInferenceService(address, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 << 20,
  });
  try {
    const live = await call(client, 'ServerLive', {});
    assert.equal(live.live, true);
    const ready = await call(client, 'ServerReady', {});
    assert.equal(ready.ready, true);

    const metadata = await call(client, 'ModelMetadata', { name: MODEL });
    assert.equal(metadata.name, MODEL);
    assert.deepEqual(metadata.inputs.map((t) => [t.name, t.datatype, t.shape.map(Number)]),
      [['data', 'FP32', [1, 784]]]);
    assert.deepEqual(metadata.outputs.map((t) => [t.name, t.datatype, t.shape.map(Number)]),
      [['output_0', 'FP32', [1, 10]]]);

    const input = readNpy(path.join(MLP, 'inputs_data.npy'));
    const expected = readNpy(path.join(MLP, 'output_0.npy'));
    const raw = await call(client, 'ModelInfer', {
      model_name: MODEL,
      id: 'node-raw',
      inputs: [{ name: 'data', datatype: 'FP32', shape: input.shape }],
      raw_input_contents: [input.data],
    });
    assertOutput(raw, expected, 'node-raw');

    const typed = await call(client, 'ModelInfer', {
      model_name: MODEL,
      id: 'node-typed',
      inputs: [{ name: 'data', datatype: 'FP32', shape: input.shape,
        contents: { fp32_contents: Array.from(input.values) } }],
    });
    assertOutput(typed, expected, 'node-typed');

    await assert.rejects(call(client, 'ModelMetadata', { name: 'no_such_model' }),
      (error) => error.code === grpc.status.NOT_FOUND);
    await assert.rejects(call(client, 'ModelInfer', {
      model_name: MODEL,
      inputs: [{ name: 'data', datatype: 'FP32', shape: input.shape }],
      raw_input_contents: [input.data.subarray(4)],
    }), (error) => error.code === grpc.status.INVALID_ARGUMENT && /data/.test(error.details));
    console.log('node gRPC client: all checks passed against', address);
  } finally {
    client.close();
  }
}

main().catch((error) => {
  console.error('FAIL:', error && error.stack ? error.stack : error);
  process.exit(1);
});
