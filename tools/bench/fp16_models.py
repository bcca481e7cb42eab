#!/usr/bin/python3
"""Writes fp16 twins of fp32 ONNX models, the way converters do it (weights and activations in f16).

usage: fp16_models.py OUT_DIR MODEL.onnx...

Every float32 initializer, Constant, graph input/output, value_info and Cast(to=FLOAT) becomes
float16, except the inputs the spec keeps in f32 (Resize's roi and scales). Each twin is
OUT_DIR/<name>_fp16.onnx and is checked with onnx.checker. This is what onnxconverter-common's
float16 conversion does with keep_io_types=False for these models.
"""
import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

from twin_models import write_twins

F32, F16 = TensorProto.FLOAT, TensorProto.FLOAT16


def to_f16_tensor(t):
    if t.data_type != F32:
        return t
    a = numpy_helper.to_array(t).astype(np.float16)
    return numpy_helper.from_array(a, t.name)


def convert_value_infos(infos):
    for vi in infos:
        tt = vi.type.tensor_type
        if tt.elem_type == F32:
            tt.elem_type = F16


# Inputs that stay float32 whatever the data type: (op, input positions).
KEEP_F32 = {"Resize": (1, 2)}


def convert_graph(g):
    keep = {n.input[i] for n in g.node for i in KEEP_F32.get(n.op_type, ()) if i < len(n.input)}
    for i, t in enumerate(g.initializer):
        if t.name not in keep:
            g.initializer[i].CopyFrom(to_f16_tensor(t))
    convert_value_infos(g.input)
    convert_value_infos(g.output)
    convert_value_infos(g.value_info)
    for n in g.node:
        if n.op_type == "Constant" and n.output[0] in keep:
            continue
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == F32:
                a.i = F16
            elif a.type == onnx.AttributeProto.TENSOR:
                a.t.CopyFrom(to_f16_tensor(a.t))
            elif a.type == onnx.AttributeProto.GRAPH:
                convert_graph(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sub in a.graphs:
                    convert_graph(sub)


def convert(model):
    convert_graph(model.graph)
    return model


if __name__ == "__main__":
    write_twins(__doc__, "fp16", convert)
