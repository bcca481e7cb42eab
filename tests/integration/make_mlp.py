#!/usr/bin/python3
"""Writes a small MLP (x[8,64] -> MatMul+Add+Relu -> MatMul -> Softmax) and an input for it.

usage: make_mlp.py OUT_DIR   (writes mlp.onnx and x.npy)
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
rng = np.random.default_rng(5)
w1 = numpy_helper.from_array(rng.standard_normal((64, 96)).astype(np.float32) * 0.2, "w1")
b1 = numpy_helper.from_array(rng.standard_normal(96).astype(np.float32) * 0.1, "b1")
w2 = numpy_helper.from_array(rng.standard_normal((96, 16)).astype(np.float32) * 0.2, "w2")
nodes = [
    helper.make_node("MatMul", ["x", "w1"], ["h0"]),
    helper.make_node("Add", ["h0", "b1"], ["h1"]),
    helper.make_node("Relu", ["h1"], ["h2"]),
    helper.make_node("MatMul", ["h2", "w2"], ["logits"]),
    helper.make_node("Softmax", ["logits"], ["probs"], axis=-1),
]
graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 64])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [8, 16])], [w1, b1, w2])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
onnx.save(model, f"{out}/mlp.onnx")
np.save(f"{out}/x.npy", rng.standard_normal((8, 64)).astype(np.float32))
