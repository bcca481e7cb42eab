#!/usr/bin/python3
"""Writes malformed ONNX models for tests/integration/bad_input.sh into OUT_DIR.

usage: gen_bad_models.py OUT_DIR GOOD_MODEL.onnx

Each NAME.onnx breaks one rule (the node that breaks it is named after what it does); the
truncated and bit-flipped copies of GOOD_MODEL are for the no-crash sweep (trunc_*, flip_*).
"""
import random
import sys

import onnx
from onnx import TensorProto as T
from onnx import helper

out, good = sys.argv[1], sys.argv[2]
x = helper.make_tensor_value_info("x", T.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", T.FLOAT, [2, 3])


def save(name, nodes, opset=13, inputs=(x,), outputs=(y,), inits=(), extra_opsets=()):
    g = helper.make_graph(nodes, "g", list(inputs), list(outputs), initializer=list(inits))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    m = helper.make_model(g, opset_imports=opsets)
    with open(f"{out}/{name}.onnx", "wb") as f:  # not onnx.save: it would refuse some of these
        f.write(m.SerializeToString())


relu = lambda name, i="x", o="y": helper.make_node("Relu", [i], [o], name=name)

# Graph structure.
save("unknown_op", [helper.make_node("FancyOp", ["x"], ["y"], name="fancy")])
save("missing_input", [helper.make_node("Add", ["x", "w"], ["y"], name="add_w")])
save("cycle", [relu("r1", "z", "y"), relu("r2", "y", "z")])
save("self_loop", [helper.make_node("Add", ["x", "z"], ["z"], name="acc"), relu("r", "z", "y")])
save("unsorted", [relu("late_reader", "z", "y"), relu("early_writer", "x", "z")])  # valid: sorted on import
# A reader of a cycle comes first in the file: the error names a node on the cycle.
save("cycle_after_unsorted", [relu("reader", "a", "y"), relu("c0", "b", "a"), relu("c1", "b2", "b"), relu("c2", "b", "b2")])
save("output_never_produced", [relu("r", "x", "t")])
save("too_few_inputs", [helper.make_node("Add", ["x"], ["y"], name="add_one")])

# Opsets and domains.
save("future_opset", [relu("r")], opset=99)
save("zero_opset", [relu("r")], opset=0)
save("unknown_domain", [helper.make_node("Foo", ["x"], ["y"], name="foo", domain="com.example")],
     extra_opsets=[("com.example", 1)])
save("unused_domain", [relu("r")], extra_opsets=[("com.microsoft", 1)])  # valid: imported, never used
g = helper.make_graph([relu("r")], "g", [x], [y])
m = helper.make_model(g, opset_imports=[])
del m.opset_import[:]
open(f"{out}/no_opset.onnx", "wb").write(m.SerializeToString())

# Shapes and data.
save("bad_shapes", [helper.make_node("MatMul", ["x", "x"], ["y"], name="mm")])
w4 = helper.make_tensor("w", T.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])
save("broadcast_mismatch", [helper.make_node("Add", ["x", "w"], ["y"], name="add_bcast")], inits=[w4])
shape5 = helper.make_tensor("s", T.INT64, [1], [5])
save("reshape_mismatch", [helper.make_node("Reshape", ["x", "s"], ["y"], name="reshape5")], inits=[shape5])
img = helper.make_tensor_value_info("img", T.FLOAT, [1, 3, 8, 8])
cw = helper.make_tensor("cw", T.FLOAT, [4, 2, 3, 3], [0.0] * 72)
save("conv_channels", [helper.make_node("Conv", ["img", "cw"], ["y"], name="conv3to2")], inputs=(img,), inits=[cw],
     outputs=(helper.make_tensor_value_info("y", T.FLOAT, None),))
short = helper.make_tensor("w", T.FLOAT, [2, 3], [0.0] * 6)
short.ClearField("float_data")
short.raw_data = b"\0" * 8
save("initializer_short", [helper.make_node("Add", ["x", "w"], ["y"], name="add_short")], inits=[short])
huge = helper.make_tensor("w", T.FLOAT, [1, 1], [0.0])
del huge.dims[:]
huge.dims.extend([1 << 31, 1 << 31])
save("initializer_huge", [helper.make_node("Add", ["x", "w"], ["y"], name="add_huge")], inits=[huge])
neg = helper.make_tensor("w", T.FLOAT, [1], [0.0])
del neg.dims[:]
neg.dims.extend([-3])
save("initializer_negative", [helper.make_node("Add", ["x", "w"], ["y"], name="add_neg")], inits=[neg])
sx = helper.make_tensor_value_info("x", T.STRING, [2, 3])
save("string_input", [relu("r")], inputs=(sx,))
seq = helper.make_tensor_sequence_value_info("x", T.FLOAT, [2, 3])
save("sequence_input", [relu("r")], inputs=(seq,))
# Sequence values are lists of tensors known at compile time: a length or position that depends
# on a model input, a sequence as a graph output or where an op takes a tensor.
n = helper.make_node
pos = helper.make_tensor_value_info("pos", T.INT64, [])
sizes = helper.make_tensor_value_info("sizes", T.INT64, [2])
save("sequence_runtime_split", [n("SplitToSequence", ["x", "sizes"], ["s"], name="split_by_input"),
                                n("ConcatFromSequence", ["s"], ["y"], name="concat", axis=0)], inputs=(x, sizes))
save("sequence_runtime_position", [n("SplitToSequence", ["x"], ["s"], name="split_rows", keepdims=1),
                                   n("SequenceAt", ["s", "pos"], ["y"], name="at_pos")], inputs=(x, pos))
save("sequence_position_range", [n("SplitToSequence", ["x"], ["s"], name="split_rows"),
                                 n("SequenceAt", ["s", "p5"], ["y"], name="at_5")],
     inits=[helper.make_tensor("p5", T.INT64, [], [5])])
save("sequence_output", [n("SequenceConstruct", ["x", "x"], ["y"], name="pair")],
     outputs=(helper.make_tensor_sequence_value_info("y", T.FLOAT, [2, 3]),))
save("sequence_to_tensor_op", [n("SequenceConstruct", ["x"], ["s"], name="one"), n("Relu", ["s"], ["y"], name="relu_seq")])
save("tensor_to_sequence_op", [n("SequenceLength", ["x"], ["y"], name="len_of_tensor")])

# Dynamic dims: every one must be listed, with the flag that fixes it.
dx = helper.make_tensor_value_info("x", T.FLOAT, ["batch", 3])
dm = helper.make_tensor_value_info("mask", T.FLOAT, ["batch", "seq", None])
save("no_shape", [helper.make_node("Relu", ["x"], ["y"], name="r")], inputs=(helper.make_tensor_value_info("x", T.FLOAT, None),))
save("dynamic", [helper.make_node("Relu", ["x"], ["y"], name="r")], inputs=(dx,))
save("dynamic_two_inputs", [helper.make_node("ReduceSum", ["mask"], ["t"], name="rs", keepdims=0),
                            helper.make_node("Relu", ["x"], ["y"], name="r")], inputs=(dx, dm))

# No-crash sweep: truncations and single-byte corruptions of a good model (fixed seed).
data = open(good, "rb").read()
rng = random.Random(4)
for i, cut in enumerate(sorted(rng.sample(range(1, len(data)), 24))):
    open(f"{out}/trunc_{i}.onnx", "wb").write(data[:cut])
# Flips land outside the weights' raw bytes: a changed weight value is still a valid model.
weights = [(data.find(t.raw_data), len(t.raw_data)) for t in onnx.load(good).graph.initializer if t.raw_data]
structure = [p for p in range(len(data)) if not any(s <= p < s + n for s, n in weights)]
for i in range(24):
    b = bytearray(data)
    for _ in range(3):
        b[rng.choice(structure)] = rng.randrange(256)
    open(f"{out}/flip_{i}.onnx", "wb").write(bytes(b))
