#!/usr/bin/python3
"""Writes ONNX models whose output sizes depend on the data (NonZero, Compress, Unique, TopK with
a run-time k, NonMaxSuppression, Loop with a run-time trip count) feeding further ops, each with several input sets: some keep many elements, one
keeps none. tests/integration/data_dependent.sh compiles each once with tgc and compares every input set's
outputs with onnxruntime's.

usage: make_data_dependent_models.py OUT_DIR   (writes OUT_DIR/<name>.onnx, OUT_DIR/<name>.<set>.<input>.npy
and OUT_DIR/manifest.txt: one line per input set, "<name> <set> <input> <input> ...")
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

rng = np.random.default_rng(0)
out_dir = sys.argv[1]
manifest = []


def save(name, nodes, inputs, outputs, sets, inits=()):
    g = h.make_graph(nodes, name, inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out_dir, name + ".onnx"))
    for k, feeds in enumerate(sets):
        for n, v in feeds.items():
            np.save(os.path.join(out_dir, f"{name}.{k}.{n}.npy"), v)
        manifest.append(f"{name} {k} " + " ".join(feeds))


def vi(name, t, shape):
    return h.make_tensor_value_info(name, t, shape)


# Detection-style: the boxes whose score passes a threshold, their areas, the sum of the kept
# areas (a reduce over the data-dependent axis) and the kept boxes' coordinates scaled.
scores = rng.random(12).astype(np.float32)
boxes = (rng.random((12, 4)) * 10).astype(np.float32)
boxes[:, 2:] += boxes[:, :2]
save("compress_boxes",
     [h.make_node("Greater", ["scores", "thr"], ["keep"]),
      h.make_node("Compress", ["boxes", "keep"], ["kept"], axis=0),
      h.make_node("Split", ["kept"], ["lo", "hi"], axis=1),
      h.make_node("Sub", ["hi", "lo"], ["wh"]),
      h.make_node("ReduceProd", ["wh"], ["area"], axes=[1], keepdims=0),
      h.make_node("ReduceSum", ["area"], ["total"], keepdims=0),
      h.make_node("Mul", ["kept", "two"], ["scaled"])],
     [vi("scores", T.FLOAT, [12]), vi("boxes", T.FLOAT, [12, 4]), vi("thr", T.FLOAT, [])],
     [vi("scaled", T.FLOAT, ["N", 4]), vi("area", T.FLOAT, ["N"]), vi("total", T.FLOAT, [])],
     [{"scores": scores, "boxes": boxes, "thr": np.float32(0.3)},
      {"scores": scores, "boxes": boxes, "thr": np.float32(0.9)},
      {"scores": scores, "boxes": boxes, "thr": np.float32(2.0)}],  # keeps nothing
     [nh.from_array(np.float32(2.0), "two")])

# NonZero's coordinates, transposed to [N, 2], gathering the values they point at.
x = rng.standard_normal((5, 6)).astype(np.float32)
save("nonzero_gather",
     [h.make_node("Greater", ["x", "zero"], ["pos"]),
      h.make_node("NonZero", ["pos"], ["idx"]),
      h.make_node("Transpose", ["idx"], ["coords"], perm=[1, 0]),
      h.make_node("GatherND", ["x", "coords"], ["vals"]),
      h.make_node("Exp", ["vals"], ["e"])],
     [vi("x", T.FLOAT, [5, 6])],
     [vi("coords", T.INT64, ["N", 2]), vi("e", T.FLOAT, ["N"])],
     [{"x": x}, {"x": -np.abs(x)}, {"x": np.abs(x) + 1}],
     [nh.from_array(np.float32(0), "zero")])

# TopK with k given at run time, its values softmaxed over the kept ones.
v = rng.standard_normal((3, 9)).astype(np.float32)
save("topk_runtime_k",
     [h.make_node("TopK", ["v", "k"], ["values", "indices"], axis=1),
      h.make_node("Softmax", ["values"], ["p"], axis=1)],
     [vi("v", T.FLOAT, [3, 9]), vi("k", T.INT64, [1])],
     [vi("p", T.FLOAT, [3, "K"]), vi("indices", T.INT64, [3, "K"])],
     [{"v": v, "k": np.array([4], np.int64)}, {"v": v, "k": np.array([9], np.int64)}, {"v": v, "k": np.array([1], np.int64)}])

# Unique (sorted, flattened) with all four outputs.
u = rng.integers(0, 6, (4, 5)).astype(np.float32)
save("unique_all",
     [h.make_node("Unique", ["u"], ["y", "first", "inverse", "counts"], sorted=1)],
     [vi("u", T.FLOAT, [4, 5])],
     [vi("y", T.FLOAT, ["U"]), vi("first", T.INT64, ["U"]), vi("inverse", T.INT64, [20]), vi("counts", T.INT64, ["U"])],
     [{"u": u}, {"u": np.zeros((4, 5), np.float32)}],)

# Detection-style: NonMaxSuppression over 40 boxes and 2 classes, the selected boxes gathered.
def corners(n):
    lo = rng.random((1, n, 2)) * 8
    return np.concatenate([lo, lo + 1 + rng.random((1, n, 2)) * 4], axis=2).astype(np.float32)


nb = corners(40)
save("nms_gather",
     [h.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score_thr"], ["selected"]),
      h.make_node("Gather", ["selected", "two_i"], ["box_index"], axis=1),
      h.make_node("Squeeze", ["boxes", "zero_axis"], ["boxes2"]),
      h.make_node("Gather", ["boxes2", "box_index"], ["picked"], axis=0)],
     [vi("boxes", T.FLOAT, [1, 40, 4]), vi("scores", T.FLOAT, [1, 2, 40]), vi("score_thr", T.FLOAT, [1])],
     [vi("selected", T.INT64, ["K", 3]), vi("picked", T.FLOAT, ["K", 4])],
     [{"boxes": nb, "scores": rng.random((1, 2, 40)).astype(np.float32), "score_thr": np.array([0.2], np.float32)},
      {"boxes": corners(40), "scores": rng.random((1, 2, 40)).astype(np.float32), "score_thr": np.array([0.9], np.float32)},
      {"boxes": nb, "scores": rng.random((1, 2, 40)).astype(np.float32), "score_thr": np.array([1.5], np.float32)}],
     [nh.from_array(np.array([8], np.int64), "max_out"), nh.from_array(np.array([0.4], np.float32), "iou"),
      nh.from_array(np.int64(2), "two_i"), nh.from_array(np.array([0], np.int64), "zero_axis")])

# A Loop whose trip count is an input (and whose body also stops it once a sum passes a limit):
# compiled with --max-trips 8 (<name>.flags); the scan output is as long as the iterations run.
body = h.make_graph(
    [h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
     h.make_node("Mul", ["x_in", "two"], ["x2"]),
     h.make_node("Add", ["x2", "fi"], ["x_out"]),
     h.make_node("ReduceSum", ["x_out"], ["s"], keepdims=0),
     h.make_node("Less", ["s", "limit"], ["cond_out"]),
     h.make_node("Identity", ["x_out"], ["y"])],
    "body",
    [vi("i", T.INT64, []), vi("cond_in", T.BOOL, []), vi("x_in", T.FLOAT, [3])],
    [vi("cond_out", T.BOOL, []), vi("x_out", T.FLOAT, [3]), vi("y", T.FLOAT, [3])])
save("loop_runtime_trips",
     [h.make_node("Loop", ["trips", "go", "x"], ["x_final", "ys"], body=body)],
     [vi("trips", T.INT64, []), vi("x", T.FLOAT, [3]), vi("limit", T.FLOAT, [])],
     [vi("x_final", T.FLOAT, [3]), vi("ys", T.FLOAT, ["K", 3])],
     [{"trips": np.int64(3), "x": np.array([0.5, -1, 2], np.float32), "limit": np.float32(1e6)},
      {"trips": np.int64(7), "x": np.array([0.5, -1, 2], np.float32), "limit": np.float32(60)},
      {"trips": np.int64(0), "x": np.array([0.5, -1, 2], np.float32), "limit": np.float32(1e6)}],
     [nh.from_array(np.array(True), "go"), nh.from_array(np.float32(2), "two")])
with open(os.path.join(out_dir, "loop_runtime_trips.flags"), "w") as f:
    f.write("--max-trips 8\n")

with open(os.path.join(out_dir, "manifest.txt"), "w") as f:
    f.write("\n".join(manifest) + "\n")
