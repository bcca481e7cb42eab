#!/usr/bin/python3
"""Writes the microbenchmark models of tgc-bench as ONNX files (opset 13) into OUT_DIR.

usage: micro_models.py OUT_DIR

Each model carries metadata that tgc-bench reads: bench.metric ("flops": held against
OpenBLAS sgemm, or "bytes": held against memcpy) and, for matmuls, bench.sgemm_n (the sgemm size
it is compared with). OUT_DIR/index.txt lists the files in table order. Weights come from a
fixed seed, so every run benchmarks the same models.
"""
import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F32 = TensorProto.FLOAT


def model(name, nodes, inputs, outputs, initializers=(), metric="flops", sgemm_n=None):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="tgc-bench")
    m.ir_version = 8
    props = {"bench.metric": metric}
    if sgemm_n:
        props["bench.sgemm_n"] = str(sgemm_n)
    helper.set_model_props(m, props)
    onnx.checker.check_model(m)
    return name, m


def one_kernel():
    # One tiny elementwise kernel: its time is the artifact's per-call overhead (input and output
    # copies, the launch, waking or not waking the thread pool).
    one = numpy_helper.from_array(np.array(1, np.float32), "one")
    return model("one_kernel_add16", [helper.make_node("Add", ["x", "one"], ["y"])],
                 [helper.make_tensor_value_info("x", F32, [16])],
                 [helper.make_tensor_value_info("y", F32, [16])], [one], metric="bytes")


def matmul(n):
    # Both operands are inputs: the same problem as the sgemm ceiling, no weight pre-packing.
    return model(f"matmul_{n}", [helper.make_node("MatMul", ["a", "b"], ["y"])],
                 [helper.make_tensor_value_info("a", F32, [n, n]), helper.make_tensor_value_info("b", F32, [n, n])],
                 [helper.make_tensor_value_info("y", F32, [n, n])], sgemm_n=n)


def conv3x3(rng):
    w = numpy_helper.from_array((rng.standard_normal((64, 64, 3, 3)) / 24).astype(np.float32), "w")
    return model("conv3x3_64x56x56", [helper.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
                 [helper.make_tensor_value_info("x", F32, [1, 64, 56, 56])],
                 [helper.make_tensor_value_info("y", F32, [1, 64, 56, 56])], [w])


def softmax(rows, cols):
    return model(f"softmax_{rows}x{cols}", [helper.make_node("Softmax", ["x"], ["y"], axis=-1)],
                 [helper.make_tensor_value_info("x", F32, [rows, cols])],
                 [helper.make_tensor_value_info("y", F32, [rows, cols])], metric="bytes")


def layernorm(rows, cols, rng):
    # Decomposed as PyTorch exports it before opset 17 (and as the real models in the corpus do).
    init = [numpy_helper.from_array(a, n) for n, a in [
        ("gamma", (1 + 0.1 * rng.standard_normal(cols)).astype(np.float32)),
        ("beta", (0.1 * rng.standard_normal(cols)).astype(np.float32)),
        ("two", np.array(2, np.float32)), ("eps", np.array(1e-5, np.float32))]]
    nodes = [
        helper.make_node("ReduceMean", ["x"], ["mean"], axes=[-1]),
        helper.make_node("Sub", ["x", "mean"], ["d"]),
        helper.make_node("Pow", ["d", "two"], ["d2"]),
        helper.make_node("ReduceMean", ["d2"], ["var"], axes=[-1]),
        helper.make_node("Add", ["var", "eps"], ["ve"]),
        helper.make_node("Sqrt", ["ve"], ["sd"]),
        helper.make_node("Div", ["d", "sd"], ["n"]),
        helper.make_node("Mul", ["n", "gamma"], ["g"]),
        helper.make_node("Add", ["g", "beta"], ["y"]),
    ]
    return model(f"layernorm_{rows}x{cols}", nodes, [helper.make_tensor_value_info("x", F32, [rows, cols])],
                 [helper.make_tensor_value_info("y", F32, [rows, cols])], init, metric="bytes")


def eltwise_chain(n, length=16):
    # Mul, Add, Tanh repeated: 16 elementwise ops that an unfused runtime runs as 16 passes.
    init = [numpy_helper.from_array(np.array(0.9, np.float32), "k"), numpy_helper.from_array(np.array(0.1, np.float32), "c")]
    nodes, cur = [], "x"
    for i in range(length):
        out = "y" if i == length - 1 else f"t{i}"
        op = ["Mul", "Add", "Tanh"][i % 3]
        nodes.append(helper.make_node(op, [cur] + ({"Mul": ["k"], "Add": ["c"]}.get(op, [])), [out]))
        cur = out
    label = f"{n // (1 << 20)}M" if n % (1 << 20) == 0 else str(n)
    return model(f"eltwise{length}_{label}", nodes, [helper.make_tensor_value_info("x", F32, [n])],
                 [helper.make_tensor_value_info("y", F32, [n])], init, metric="bytes")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 1
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    # The small softmax/layernorm/eltwise sizes stay in cache; the large ones (>= 32 MiB each
    # way) stream from DRAM, where the memcpy ceiling applies.
    models = [one_kernel()] + [matmul(n) for n in (256, 512, 1024, 2048)] + [
        conv3x3(rng), softmax(256, 1024), softmax(8192, 1024), layernorm(256, 1024, rng), layernorm(8192, 1024, rng),
        eltwise_chain(1 << 20), eltwise_chain(16 << 20)]
    for name, m in models:
        onnx.save(m, str(out / f"{name}.onnx"))
    (out / "index.txt").write_text("".join(f"{name}.onnx\n" for name, _ in models))
    return 0


if __name__ == "__main__":
    sys.exit(main())
