#!/usr/bin/python3
"""Writes variants of ONNX node test cases whose inputs are baked into the model as initializers.

Many node tests feed shape-determining values (axes, k, pads, scales, sizes, trip counts) as graph
inputs. tgc compiles static graphs, so those values must be known at compile time; the variants
check the ops' semantics against the official expected outputs all the same.

usage: make_const_node_tests.py NODE_DIR OUT_DIR LIST_FILE
LIST_FILE names variants, one a line: <case>__const1 (every input but the first baked in) or
<case>__constall (every input baked in). Each becomes OUT_DIR/<variant>/ in the node test layout.
"""
import os
import shutil
import sys

import onnx


def main():
    src, dst, listing = sys.argv[1:4]
    for line in open(listing):
        name = line.strip()
        if not name or name.startswith("#"):
            continue
        case, mode = name.rsplit("__", 1)
        keep = 1 if mode == "const1" else 0
        m = onnx.load(os.path.join(src, case, "model.onnx"))
        inits = {i.name for i in m.graph.initializer}
        inputs = [i for i in m.graph.input if i.name not in inits]
        out = os.path.join(dst, name, "test_data_set_0")
        os.makedirs(out, exist_ok=True)
        data = os.path.join(src, case, "test_data_set_0")
        for k, vi in enumerate(inputs):
            pb = os.path.join(data, f"input_{k}.pb")
            if k < keep:
                shutil.copy(pb, os.path.join(out, f"input_{k}.pb"))
                continue
            t = onnx.TensorProto()
            with open(pb, "rb") as f:
                t.ParseFromString(f.read())
            t.name = vi.name
            m.graph.initializer.append(t)
            m.graph.input.remove(vi)
        for f in os.listdir(data):
            if f.startswith("output_"):
                shutil.copy(os.path.join(data, f), out)
        onnx.save(m, os.path.join(dst, name, "model.onnx"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
