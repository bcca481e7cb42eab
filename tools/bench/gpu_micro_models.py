#!/usr/bin/python3
"""Writes the GPU microbenchmark models of docs/performance-gpu.md into OUT_DIR, with inputs.

usage: gpu_micro_models.py OUT_DIR

  chain100.onnx   100 dependent [1,16] x [16,16] MatMuls (100 kernels of almost no work), and
  chain1.onnx     one: the per-kernel cost inside a model is (chain100's latency - chain1's) / 99.
                  Input x.npy.
  mm1024.onnx     C = A @ B of two [n,n] inputs, no weights (small to carry); inputs
  mm4096.onnx     a{n}.npy, b{n}.npy are written on the GPU machine by `--inputs` (256 MB at 4096).
  mm1024_f16.onnx the same in f16 (tensor cores on cuda), inputs a{n}_f16.npy, b{n}_f16.npy.
  mm4096_f16.onnx

On the GPU machine: `gpu_micro_models.py --inputs DIR` writes only the matmul inputs.
"""
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


def save(path, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tgc-bench")
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--inputs":
        out = pathlib.Path(sys.argv[2])
        for n in (1024, 4096):
            r = np.random.default_rng(n)
            a, b = r.standard_normal((n, n)).astype(np.float32), r.standard_normal((n, n)).astype(np.float32)
            np.save(out / f"a{n}.npy", a)
            np.save(out / f"b{n}.npy", b)
            np.save(out / f"a{n}_f16.npy", a.astype(np.float16))
            np.save(out / f"b{n}_f16.npy", b.astype(np.float16))
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    for length in (1, 100):
        rng = np.random.default_rng(0)
        nodes, weights, prev = [], [], "x"
        for i in range(length):
            weights.append(numpy_helper.from_array((rng.standard_normal((16, 16)) * 0.25).astype(np.float32), f"w{i}"))
            nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], ["y" if i == length - 1 else f"h{i}"]))
            prev = nodes[-1].output[0]
        save(out / f"chain{length}.onnx", nodes, [helper.make_tensor_value_info("x", F32, [1, 16])],
             [helper.make_tensor_value_info("y", F32, [1, 16])], weights)
    np.save(out / "x.npy", rng.standard_normal((1, 16)).astype(np.float32))
    for n in (1024, 4096):
        for t, suffix in ((F32, ""), (TensorProto.FLOAT16, "_f16")):
            save(out / f"mm{n}{suffix}.onnx", [helper.make_node("MatMul", ["a", "b"], ["c"])],
                 [helper.make_tensor_value_info("a", t, [n, n]), helper.make_tensor_value_info("b", t, [n, n])],
                 [helper.make_tensor_value_info("c", t, [n, n])])


if __name__ == "__main__":
    main()
