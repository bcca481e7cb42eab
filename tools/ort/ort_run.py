#!/usr/bin/env python3
"""ort_run.js's twin for machines with onnxruntime's Python package instead of Node (the lent GPU
machine): the same arguments and output, so `tgc-bench --ort tools/ort/ort_run.py` runs it.

  ort_run.py MODEL.onnx -i NAME=FILE.npy ... [-o DIR] [--bench N] [--threads N]

-i takes an ONNX or file-safe input name; -o DIR writes DIR/<file-safe output name>.npy;
--bench N prints a last JSON line with median_ms and min_ms.
"""
import json
import os
import re
import sys
import time

import numpy as np
import onnxruntime as ort


def file_safe(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def main(argv):
    model, out_dir, bench, threads, inputs = None, None, 0, 1, []
    it = iter(argv)
    for a in it:
        if a == "-i":
            inputs.append(next(it))
        elif a == "-o":
            out_dir = next(it)
        elif a == "--bench":
            bench = int(next(it))
        elif a == "--threads":
            threads = int(next(it))
        elif model is None:
            model = a
        else:
            raise ValueError(f"unexpected argument {a}")
    if model is None:
        raise ValueError(__doc__.strip().splitlines()[3].strip())
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    feeds = {}
    for spec in inputs:
        name, _, file = spec.partition("=")
        real = next((n for n in names if n == name or file_safe(n) == name), None)
        if real is None:
            raise ValueError(f"-i {name}: the model has no input of that name")
        feeds[real] = np.load(file)
    out = session.run(None, feeds)
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        for o, v in zip(session.get_outputs(), out):
            np.save(os.path.join(out_dir, file_safe(o.name) + ".npy"), v)
    if bench > 0:
        # Warm-up as ort_run.js: 3 runs, and on for a quarter second.
        start, i = time.perf_counter(), 0
        while i < 3 or (i < 1000 and time.perf_counter() - start < 0.25):
            session.run(None, feeds)
            i += 1
        times = []
        for _ in range(bench):
            t0 = time.perf_counter()
            session.run(None, feeds)
            times.append((time.perf_counter() - t0) * 1e3)
        times.sort()
        print(json.dumps({"median_ms": times[len(times) // 2], "min_ms": times[0], "iters": bench, "threads": threads}))


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except Exception as e:  # one line, as ort_run.js
        print(f"ort_run: error: {e}", file=sys.stderr)
        sys.exit(1)
