#!/usr/bin/python3
"""Writes dynamically quantized twins of fp32 ONNX conv nets, as onnxruntime's quantize_dynamic does.

usage: int8_models.py OUT_DIR MODEL.onnx...

Every Conv with a constant weight becomes DynamicQuantizeLinear on its input (uint8 with a
scale and zero point computed per run), ConvInteger against the weight quantized once to uint8
(per tensor, asymmetric), a Cast of the int32 sum to float, a Mul by the two scales and the Add
of the bias: the graph onnxruntime.quantization.quantize_dynamic writes for Conv. Each twin is
OUT_DIR/<name>_int8.onnx and is checked with onnx.checker. convert(model, matmul=True) (the zoo's
transformer twins) also turns each MatMul by a constant 2-D weight into DynamicQuantizeLinear,
MatMulInteger, Cast and a Mul by the scales, as quantize_dynamic does for MatMul.
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from twin_models import write_twins


def quantize_weight(w):
    lo, hi = min(float(w.min()), 0.0), max(float(w.max()), 0.0)
    scale = (hi - lo) / 255.0 or 1.0
    zero = int(round(-lo / scale))
    q = np.clip(np.round(w / scale) + zero, 0, 255).astype(np.uint8)
    return q, np.float32(scale), np.uint8(zero)


def convert(model, matmul=False):
    opset = max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))
    if opset < 11:
        sys.exit(f"int8_models.py: opset {opset}; DynamicQuantizeLinear needs 11 (converting the rest is not done here)")
    g = model.graph
    consts = {t.name: numpy_helper.to_array(t) for t in g.initializer}  # also Constant nodes' (Paddle exports)
    consts.update({n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in g.node
                   if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"})
    nodes = []
    for n in g.node:
        if matmul and n.op_type == "MatMul" and n.input[1] in consts and consts[n.input[1]].ndim == 2:
            p = n.name or n.output[0]
            q, ws, wz = quantize_weight(consts[n.input[1]])
            g.initializer.extend([numpy_helper.from_array(q, p + "_wq"),
                                  numpy_helper.from_array(np.array(ws), p + "_ws"),
                                  numpy_helper.from_array(np.array(wz), p + "_wz")])
            nodes.append(helper.make_node("DynamicQuantizeLinear", [n.input[0]], [p + "_xq", p + "_xs", p + "_xz"]))
            nodes.append(helper.make_node("MatMulInteger", [p + "_xq", p + "_wq", p + "_xz", p + "_wz"], [p + "_acc"]))
            nodes.append(helper.make_node("Cast", [p + "_acc"], [p + "_accf"], to=TensorProto.FLOAT))
            nodes.append(helper.make_node("Mul", [p + "_xs", p + "_ws"], [p + "_s"]))
            nodes.append(helper.make_node("Mul", [p + "_accf", p + "_s"], [n.output[0]]))
            continue
        if n.op_type != "Conv" or n.input[1] not in consts:
            nodes.append(n)
            continue
        p = n.name or n.output[0]
        w = consts[n.input[1]]
        q, ws, wz = quantize_weight(w)
        g.initializer.extend([numpy_helper.from_array(q, p + "_wq"), numpy_helper.from_array(np.array(ws), p + "_ws"),
                              numpy_helper.from_array(np.array(wz), p + "_wz")])
        nodes.append(helper.make_node("DynamicQuantizeLinear", [n.input[0]], [p + "_xq", p + "_xs", p + "_xz"]))
        conv = helper.make_node("ConvInteger", [p + "_xq", p + "_wq", p + "_xz", p + "_wz"], [p + "_acc"])
        conv.attribute.extend(n.attribute)
        nodes.append(conv)
        nodes.append(helper.make_node("Cast", [p + "_acc"], [p + "_accf"], to=TensorProto.FLOAT))
        nodes.append(helper.make_node("Mul", [p + "_xs", p + "_ws"], [p + "_s"]))
        out = n.output[0] if len(n.input) < 3 else p + "_scaled"
        nodes.append(helper.make_node("Mul", [p + "_accf", p + "_s"], [out]))
        if len(n.input) >= 3:
            b = consts[n.input[2]].reshape(-1, 1, 1)
            g.initializer.append(numpy_helper.from_array(b.astype(np.float32), p + "_b"))
            nodes.append(helper.make_node("Add", [out, p + "_b"], [n.output[0]]))
    used = {i for n in nodes for i in n.input}
    nodes = [n for n in nodes if n.op_type != "Constant" or n.output[0] in used]
    del g.node[:]
    g.node.extend(nodes)
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    return model


if __name__ == "__main__":
    write_twins(__doc__, "int8", convert)
