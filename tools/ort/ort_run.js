#!/usr/bin/env node
// Runs a model with onnxruntime-node (CPU), the reference and speed peer of tgc, using tgc's
// conventions: -i NAME=FILE.npy (ONNX or file-safe name), -o DIR writes DIR/<file-safe>.npy,
// --bench N prints a last JSON line with median_ms and min_ms, --threads N.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

const DTYPES = {
  '<f2': ['float16', Uint16Array], '<f4': ['float32', Float32Array], '<f8': ['float64', Float64Array], '<i8': ['int64', BigInt64Array],
  '<i4': ['int32', Int32Array], '|u1': ['uint8', Uint8Array], '|i1': ['int8', Int8Array], '|b1': ['bool', Uint8Array],
};
const fileSafe = (s) => s.replace(/[^A-Za-z0-9._-]/g, '_');

function readNpy(file) {
  const b = fs.readFileSync(file);
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const off = major === 1 ? 10 : 12;
  const header = b.toString('latin1', off, off + hlen);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter((s) => s.trim()).map(Number);
  const [type, Arr] = DTYPES[descr] || (() => { throw new Error(`${file}: unsupported dtype ${descr}`); })();
  const data = b.subarray(off + hlen);
  const copy = new Uint8Array(data.length);
  copy.set(data);
  let arr = new Arr(copy.buffer, 0, data.length / Arr.BYTES_PER_ELEMENT);
  if (type === 'bool') arr = Array.from(arr, (v) => v !== 0);
  return new ort.Tensor(type, arr, shape);
}

function writeNpy(file, t) {
  const codes = { float16: '<f2', float32: '<f4', float64: '<f8', int64: '<i8', int32: '<i4', uint8: '|u1', int8: '|i1', bool: '|b1' };
  const shape = t.dims.length === 1 ? `${t.dims[0]},` : t.dims.join(', ');
  let h = `{'descr': '${codes[t.type]}', 'fortran_order': False, 'shape': (${shape}), }`;
  h += ' '.repeat(64 - ((10 + h.length + 1) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  Buffer.from('\x93NUMPY', 'latin1').copy(pre, 0);
  pre[6] = 1; pre[7] = 0; pre.writeUInt16LE(h.length, 8);
  const data = t.type === 'bool' ? Buffer.from(Uint8Array.from(t.data, (v) => (v ? 1 : 0))) : Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  fs.writeFileSync(file + '.tmp', Buffer.concat([pre, Buffer.from(h, 'latin1'), data]));
  fs.renameSync(file + '.tmp', file);
}

async function main() {
  const args = process.argv.slice(2);
  let model = null, outDir = null, bench = 0, threads = 1;
  const inputs = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '-i') inputs.push(args[++i]);
    else if (a === '-o') outDir = args[++i];
    else if (a === '--bench') bench = Number(args[++i]);
    else if (a === '--threads') threads = Number(args[++i]);
    else if (!model) model = a;
    else throw new Error(`unexpected argument ${a}`);
  }
  if (!model) throw new Error('usage: ort_run.js MODEL.onnx -i NAME=FILE.npy ... [-o DIR] [--bench N] [--threads N]');
  const session = await ort.InferenceSession.create(model, { intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all' });
  const feeds = {};
  for (const spec of inputs) {
    const eq = spec.indexOf('=');
    const name = spec.slice(0, eq);
    const real = session.inputNames.find((n) => n === name || fileSafe(n) === name);
    if (!real) throw new Error(`-i ${name}: the model has no input of that name`);
    feeds[real] = readNpy(spec.slice(eq + 1));
  }
  let out = await session.run(feeds);
  if (outDir) {
    fs.mkdirSync(outDir, { recursive: true });
    for (const name of session.outputNames) writeNpy(path.join(outDir, fileSafe(name) + '.npy'), out[name]);
  }
  if (bench > 0) {
    // Warm-up: 3 runs, and on for a quarter second. On the Zen 5 VM onnxruntime's first 10-20
    // runs of a small model took 5x its steady time (eltwise16_1M: 15 ms, then 3), which a
    // short --bench (tgc-bench's first estimate) measured as its speed.
    const warmStart = process.hrtime.bigint();
    for (let i = 0; i < 3 || (i < 1000 && process.hrtime.bigint() - warmStart < 250000000n); i++) out = await session.run(feeds);
    const times = [];
    for (let i = 0; i < bench; i++) {
      const t0 = process.hrtime.bigint();
      await session.run(feeds);
      times.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    times.sort((a, b) => a - b);
    console.log(JSON.stringify({ median_ms: times[Math.floor(times.length / 2)], min_ms: times[0], iters: bench, threads }));
  }
}

main().catch((e) => { console.error(`ort_run: error: ${e.message}`); process.exit(1); });
