#!/usr/bin/python3
"""Writes small single-purpose ONNX models (and seeded inputs) for ops or op variants that ONNX's
node tests in Debian's onnx 1.12 do not cover: newer opsets (GroupNormalization, Mish, Gelu, Pad
wrap, scatter max/min, Resize axes/keep_aspect_ratio_policy/half_pixel_symmetric), bidirectional
and length-masked recurrences, If on a run-time condition, unrolled Loop, per-channel QLinearConv,
TfIdfVectorizer IDF/TFIDF weights, CumSum on a run-time axis, BatchNormalization training mode,
one tensor as two model outputs, linear Resize before DynamicQuantizeLinear (bit for bit) and
dynamically quantized Conv/Resize/ConvInteger chains (bit for bit on x86 CPUs).
tests/integration/ops_vs_ort.sh compiles each with tgc and compares with onnxruntime.

usage: make_op_models.py OUT_DIR   (writes OUT_DIR/<name>.onnx, OUT_DIR/<name>.<input>.npy and
OUT_DIR/manifest.txt: one line per model, "<name> <input> <input> ...")
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


def f32(*shape, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def save(name, nodes, inputs, outputs, opset, inits=()):
    """inputs: {name: array}; outputs: [(name, elem_type)]; inits: [(name, array)]."""
    def info(n, a):
        return h.make_tensor_value_info(n, h.np_dtype_to_tensor_dtype(a.dtype) if hasattr(h, "np_dtype_to_tensor_dtype")
                                        else onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], list(a.shape))
    g = h.make_graph(nodes, name, [info(n, a) for n, a in inputs.items()],
                     [h.make_tensor_value_info(n, t, None) for n, t in outputs],
                     [nh.from_array(a, n) for n, a in inits])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.save(m, os.path.join(out_dir, name + ".onnx"))
    for n, a in inputs.items():
        np.save(os.path.join(out_dir, f"{name}.{n}.npy"), a)
    manifest.append(" ".join([name] + list(inputs)))


F = T.FLOAT

# GroupNormalization: opset 18 (scale/bias per group) and 21 (per channel).
save("group_norm_18", [h.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, epsilon=1e-3)],
     {"x": f32(2, 6, 5, 4)}, [("y", F)], 18, [("s", f32(3)), ("b", f32(3))])
save("group_norm_21", [h.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2)],
     {"x": f32(2, 6, 5, 4)}, [("y", F)], 21, [("s", f32(6)), ("b", f32(6))])
save("mish", [h.make_node("Mish", ["x"], ["y"])], {"x": f32(3, 50, scale=4)}, [("y", F)], 18)
save("gelu", [h.make_node("Gelu", ["x"], ["y"]), h.make_node("Gelu", ["x"], ["z"], approximate="tanh")],
     {"x": f32(4, 40, scale=3)}, [("y", F), ("z", F)], 20)
save("pad_wrap", [h.make_node("Pad", ["x", "p"], ["y"], mode="wrap")], {"x": f32(2, 3, 4)}, [("y", F)], 19,
     [("p", np.array([0, 2, 3, 0, 1, 2], np.int64))])  # onnxruntime and numpy disagree on pads beyond the axis
save("scatter_max_min",
     [h.make_node("ScatterElements", ["x", "i", "u"], ["y"], axis=1, reduction="max"),
      h.make_node("ScatterND", ["x", "j", "v"], ["z"], reduction="min")],
     {"x": f32(3, 5), "u": f32(3, 2), "v": f32(2, 5)}, [("y", F), ("z", F)], 18,
     [("i", np.array([[1, 1], [0, 4], [2, 3]], np.int64)), ("j", np.array([[2], [2]], np.int64))])
save("resize_axes_aspect",
     [h.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_larger")],
     {"x": f32(1, 2, 6, 8)}, [("y", F)], 18, [("sz", np.array([9, 20], np.int64))])
save("resize_half_pixel_symmetric",
     [h.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear", coordinate_transformation_mode="half_pixel_symmetric")],
     {"x": f32(1, 2, 5, 7)}, [("y", F)], 19, [("sc", np.array([1, 1, 1.5, 0.6], np.float32))])
save("resize_bilinear_x2", [h.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear")],
     {"x": f32(1, 3, 7, 9)}, [("y", F)], 13, [("sc", np.array([1, 1, 2, 2], np.float32))])
save("resize_nearest_sizes", [h.make_node("Resize", ["x", "", "", "sz"], ["y"], mode="nearest",
                                          coordinate_transformation_mode="asymmetric", nearest_mode="floor")],
     {"x": f32(1, 3, 7, 9)}, [("y", F)], 13, [("sz", np.array([1, 3, 12, 5], np.int64))])

save("lp_ops", [h.make_node("LpPool", ["x"], ["a"], kernel_shape=[3, 2], strides=[2, 1], pads=[1, 0, 1, 1]),
                h.make_node("LpPool", ["x"], ["b"], kernel_shape=[2, 2], p=1),
                h.make_node("GlobalLpPool", ["x"], ["g"], p=2),
                h.make_node("LpNormalization", ["x"], ["n"], axis=1, p=2)],
     {"x": f32(2, 3, 6, 5)}, [("a", F), ("b", F), ("g", F), ("n", F)], 13)

# Recurrences: bidirectional LSTM and GRU, and a forward LSTM with per-batch lengths.
H, I, S, B = 5, 4, 6, 3
save("lstm_bidirectional", [h.make_node("LSTM", ["x", "w", "r", "b", "", "h0", "c0"], ["y", "yh", "yc"],
                                        hidden_size=H, direction="bidirectional")],
     {"x": f32(S, B, I), "h0": f32(2, B, H), "c0": f32(2, B, H)}, [("y", F), ("yh", F), ("yc", F)], 14,
     [("w", f32(2, 4 * H, I, scale=0.5)), ("r", f32(2, 4 * H, H, scale=0.5)), ("b", f32(2, 8 * H, scale=0.5))])
save("lstm_seq_lens", [h.make_node("LSTM", ["x", "w", "r", "b", "lens"], ["y", "yh", "yc"], hidden_size=H)],
     {"x": f32(S, B, I)}, [("y", F), ("yh", F), ("yc", F)], 14,
     [("w", f32(1, 4 * H, I, scale=0.5)), ("r", f32(1, 4 * H, H, scale=0.5)), ("b", f32(1, 8 * H, scale=0.5)),
      ("lens", np.array([6, 2, 4], np.int32))])
save("gru_bidirectional_lbr", [h.make_node("GRU", ["x", "w", "r", "b"], ["y", "yh"], hidden_size=H,
                                           direction="bidirectional", linear_before_reset=1)],
     {"x": f32(S, B, I)}, [("y", F), ("yh", F)], 14,
     [("w", f32(2, 3 * H, I, scale=0.5)), ("r", f32(2, 3 * H, H, scale=0.5)), ("b", f32(2, 6 * H, scale=0.5))])

# If on a run-time condition (both branches computed and selected), nested in an unrolled Loop.
then_g = h.make_graph([h.make_node("Mul", ["acc", "two"], ["t"])], "then", [], [h.make_tensor_value_info("t", F, None)],
                      [nh.from_array(np.array(2, np.float32), "two")])
else_g = h.make_graph([h.make_node("Sub", ["acc", "x"], ["e"])], "else", [], [h.make_tensor_value_info("e", F, None)])
body = h.make_graph(
    [h.make_node("Add", ["acc_in", "x"], ["acc"]),
     h.make_node("ReduceSum", ["acc"], ["s"], keepdims=0),
     h.make_node("Greater", ["s", "zero"], ["pos"]),
     h.make_node("If", ["pos"], ["next"], then_branch=then_g, else_branch=else_g),
     h.make_node("Identity", ["cond_in"], ["cond_out"]),
     h.make_node("Identity", ["next"], ["scan_out"])],
    "body",
    [h.make_tensor_value_info("iter", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
     h.make_tensor_value_info("acc_in", F, [2, 3])],
    [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("next", F, None),
     h.make_tensor_value_info("scan_out", F, None)],
    [nh.from_array(np.array(0, np.float32), "zero")])
save("loop_if", [h.make_node("Loop", ["trips", "cond", "init"], ["final", "steps"], body=body)],
     {"x": f32(2, 3), "init": f32(2, 3)}, [("final", F), ("steps", F)], 13,
     [("trips", np.array(4, np.int64)), ("cond", np.array(True))])

# QLinearConv with per-output-channel weight scales and zero point 0 (int8 weights).
save("qlinearconv_per_channel",
     [h.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "bias"], ["y"], pads=[1, 1, 1, 1])],
     {"x": rng.integers(0, 255, (1, 3, 6, 6)).astype(np.uint8)}, [("y", T.UINT8)], 13,
     [("xs", np.array(0.02, np.float32)), ("xz", np.array(128, np.uint8)),
      ("w", rng.integers(-60, 60, (4, 3, 3, 3)).astype(np.int8)), ("ws", np.array([0.01, 0.02, 0.005, 0.03], np.float32)),
      ("wz", np.zeros(4, np.int8)), ("ys", np.array(0.05, np.float32)), ("yz", np.array(100, np.uint8)),
      ("bias", rng.integers(-500, 500, (4,)).astype(np.int32))])

# TfIdfVectorizer: IDF and TFIDF weights, uni/bi/trigrams with skips, output columns permuted.
tfidf = dict(min_gram_length=1, max_gram_length=3, max_skip_count=2, ngram_counts=[0, 3, 7],
             pool_int64s=[1, 4, 5, 1, 2, 3, 4, 0, 0, 2, 1, 4, 5, 0, 1, 2],
             ngram_indexes=[4, 0, 2, 6, 1, 3, 5, 7], weights=[0.5, 1.5, 2, 0.25, 3, 1, 0.75, 2.5])
save("tfidf_idf_tfidf", [h.make_node("TfIdfVectorizer", ["x"], ["idf"], mode="IDF", **tfidf),
                         h.make_node("TfIdfVectorizer", ["x"], ["tfidf"], mode="TFIDF", **tfidf)],
     {"x": rng.integers(0, 6, (3, 14)).astype(np.int32)}, [("idf", F), ("tfidf", F)], 9)

# CumSum whose axis is a model input: the artifact must honour the value given at run time.
save("cumsum_runtime_axis", [h.make_node("CumSum", ["x", "a"], ["y"]),
                             h.make_node("CumSum", ["x", "b"], ["z"], exclusive=1, reverse=1)],
     {"x": f32(2, 3, 4), "a": np.array(1, np.int32), "b": np.array([-3], np.int64)}, [("y", F), ("z", F)], 14)

# BatchNormalization in training mode: batch statistics, blended running mean/var.
save("batchnorm_training", [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y", "rm", "rv"],
                                        training_mode=1, momentum=0.7, epsilon=1e-3)],
     {"x": f32(2, 3, 4, 5, scale=2)}, [("y", F), ("rm", F), ("rv", F)], 15,
     [("s", f32(3)), ("b", f32(3)), ("m", f32(3)), ("v", np.abs(f32(3)) + 0.5)])

# One tensor as two model outputs (both Identity of one Add): each output gets its own buffer.
save("same_tensor_twice", [h.make_node("Add", ["x", "x"], ["s"]), h.make_node("Identity", ["s"], ["a"]),
                           h.make_node("Identity", ["s"], ["b"])],
     {"x": f32(3, 4)}, [("a", F), ("b", F)], 13)

# Nodes out of topological order, as fp16 converters write them (the Cast of the input appended at
# the end) and an If whose branches read a value produced after it: imported in sorted order.
then_g = h.make_graph([h.make_node("Identity", ["mf"], ["t"])], "then", [], [h.make_tensor_value_info("t", F, None)])
else_g = h.make_graph([h.make_node("Neg", ["mf"], ["e"])], "else", [], [h.make_tensor_value_info("e", F, None)])
save("unsorted_nodes", [h.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
                        h.make_node("Mul", ["xr", "xr"], ["mf"]),
                        h.make_node("Cast", ["xh"], ["xr"], to=F),
                        h.make_node("Cast", ["x"], ["xh"], to=T.FLOAT16)],
     {"x": f32(3, 4)}, [("y", F)], 13, [("cond", np.array(False))])

# Quantization as onnxruntime computes it: q = x / scale in f32 (correctly rounded), round half
# to even, saturate; integer outputs must be identical. Inputs sit on and next to the ties of
# x / scale, around the saturation bounds, and at random.
def around_ties(scale, n):
    k = rng.integers(-300, 300, n).astype(np.float32) + np.float32(0.5)
    t = (k * np.float32(scale)).astype(np.float32)
    return np.concatenate([t, np.nextafter(t, np.float32(np.inf)), np.nextafter(t, np.float32(-np.inf)),
                           f32(n, scale=100 * scale)]).astype(np.float32)
scale_u8, scale_i8 = np.float32(0.0137), np.array([0.0213, 0.1, 0.00731], np.float32)
save("quantize_linear_ties", [h.make_node("QuantizeLinear", ["x", "s", "z"], ["y"]),
                              h.make_node("QuantizeLinear", ["w", "si", "zi"], ["yi"], axis=0)],
     {"x": around_ties(scale_u8, 20000), "w": np.stack([around_ties(v, 4000) for v in scale_i8])},
     [("y", T.UINT8), ("yi", T.INT8)], 13,
     [("s", scale_u8), ("z", np.array(131, np.uint8)), ("si", scale_i8), ("zi", np.array([-3, 0, 7], np.int8))])
# DynamicQuantizeLinear: scale = (max - min) / 255 in f32 (1 when all are 0), zero point
# round(-min / scale); one input of each kind.
dq = lambda i: h.make_node("DynamicQuantizeLinear", [i], ["y_" + i, "s_" + i, "z_" + i])
save("dynamic_quantize_linear", [dq("a"), dq("b"), dq("c"), dq("d")],
     {"a": f32(300, 257, scale=3), "b": np.abs(f32(50, 100)), "c": np.zeros((4, 5), np.float32),
      "d": (f32(40, 100) * np.float32(0.37) - np.float32(0.8)).astype(np.float32)},
     [(p + i, t) for i in "abcd" for p, t in (("y_", T.UINT8), ("s_", F), ("z_", T.UINT8))], 13)

# ConvInteger with channels in fours: int8 dot products over packed words (Op::Dot4), the
# zero points' terms apart; the padding holds x's zero point. Integer outputs: exact.
u8 = lambda *shape: rng.integers(0, 256, shape).astype(np.uint8)
save("conv_integer_dot4", [h.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], pads=[1, 2, 1, 0], strides=[2, 1])],
     {"x": u8(2, 8, 9, 7), "xz": np.array(131, np.uint8)}, [("y", T.INT32)], 10,
     [("w", u8(6, 8, 3, 3)), ("wz", np.array(97, np.uint8))])
save("conv_integer_dot4_1d", [h.make_node("ConvInteger", ["x", "w"], ["y"], dilations=[2])],
     {"x": u8(1, 12, 30)}, [("y", T.INT32)], 10, [("w", u8(5, 12, 3))])

# Linear Resize of 4-D and 2-D tensors, each followed by a DynamicQuantizeLinear: onnxruntime's
# bilinear kernel sums four weighted taps in f32 (not an axis at a time), and the quantizer's
# scale shows a last-bit difference in any value. Bit for bit.
rz = lambda i, o, **kw: h.make_node("Resize", [i, "", *(["s" + o] if "sz" not in kw else ["", "sz" + o])], [o],
                                    mode="linear", **{k: v for k, v in kw.items() if k != "sz"})
save("resize_linear_dq", [rz("x", "a"), rz("x", "b", coordinate_transformation_mode="asymmetric"),
                          rz("x", "c", coordinate_transformation_mode="pytorch_half_pixel", sz=1),
                          rz("x", "d", coordinate_transformation_mode="align_corners", sz=1),
                          rz("m", "e", coordinate_transformation_mode="half_pixel"),
                          *[dq(v) for v in "abcde"]],
     {"x": f32(1, 8, 40, 52, scale=3), "m": f32(30, 17)},
     [(p + v, t) for v in "abcde" for p, t in (("", F), ("y_", T.UINT8), ("s_", F), ("z_", T.UINT8))], 13,
     [("sa", np.array([1, 1, 2, 2], np.float32)), ("sb", np.array([1, 1, 0.5, 1.5], np.float32)),
      ("szc", np.array([1, 8, 97, 31], np.int64)), ("szd", np.array([1, 8, 79, 103], np.int64)),
      ("se", np.array([2.5, 3], np.float32))])

# A dynamically quantized chain, three times: Conv -> Resize (linear, x2) -> DynamicQuantizeLinear
# -> ConvInteger -> Cast + Mul by x_scale * w_scale (what onnxruntime's dynamic quantization
# writes). Each DynamicQuantizeLinear rounds the resized values to uint8, and its scale follows
# the largest and smallest value to the last bit, so every float op before it must round as
# onnxruntime's: on x86 CPU targets tgc sums these Convs in MLAS's order and resizes their outputs
# as MLAS's NCHWc upsample does (frontend/onnx/onnx_mlas_order.h). Bit for bit (exact.txt).
chain, chain_inits, t, cin = [], [], "x", 3
for i in range(3):
    n = lambda op, ins, outs, **kw: chain.append(h.make_node(op, ins, outs, **kw))
    n("Conv", [t, f"cw{i}", f"cb{i}"], [f"c{i}"], pads=[1, 1, 1, 1])
    n("Resize", [f"c{i}", "", "up"], [f"r{i}"], mode="linear")
    n("DynamicQuantizeLinear", [f"r{i}"], [f"q{i}", f"s{i}", f"z{i}"])
    n("ConvInteger", [f"q{i}", f"qw{i}", f"z{i}", f"qz{i}"], [f"ci{i}"], pads=[1, 1, 1, 1])
    n("Cast", [f"ci{i}"], [f"cf{i}"], to=F)
    n("Mul", [f"s{i}", f"qs{i}"], [f"sc{i}"])
    n("Mul", [f"cf{i}", f"sc{i}"], [f"d{i}"])
    chain_inits += [(f"cw{i}", f32(8, cin, 3, 3, scale=0.3)), (f"cb{i}", f32(8, scale=0.1)),
                    (f"qw{i}", rng.integers(0, 256, (8, 8, 3, 3)).astype(np.uint8)),
                    (f"qz{i}", np.array(rng.integers(100, 156), np.uint8)),
                    (f"qs{i}", np.array(rng.uniform(1e-3, 4e-3), np.float32))]
    t, cin = f"d{i}", 8
chain_inits.append(("up", np.array([1, 1, 2, 2], np.float32)))
save("dynamic_quant_chain", chain, {"x": f32(1, 3, 16, 16)}, [("d2", F), ("q2", T.UINT8), ("s2", F), ("z2", T.UINT8)],
     13, chain_inits)

# The same chain over other conv shapes, each layer Conv -> Resize -> DynamicQuantizeLinear ->
# ConvInteger -> dequantize: a 3-channel stride-2 conv with a Relu (MLAS's NCHW kernel), 24
# channels stride 2 (NCHWc blocks; padded to 32 with AVX-512), a 1x1 over 160 channels (the
# pointwise kernel's runs of 128), a depthwise conv; resizes half_pixel, asymmetric,
# align_corners and x3. Bit for bit as well.
wide, wide_inits, t = [], [], "x"
layers = [  # conv weight shape, conv attrs, relu, resize scale, resize mode, ConvInteger weight shape, its attrs
    ((16, 3, 3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2]), True, 2, "half_pixel", (24, 16, 3, 3),
     dict(pads=[1, 1, 1, 1], strides=[2, 2])),
    ((32, 24, 3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2]), False, 2, "asymmetric", (160, 32, 1, 1), {}),
    ((16, 160, 1, 1), {}, False, 2, "align_corners", (16, 16, 3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2])),
    ((16, 1, 3, 3), dict(pads=[1, 1, 1, 1], group=16), True, 3, "half_pixel", None, None)]
for i, (cw, ca, relu, up, mode, qw, qa) in enumerate(layers):
    n = lambda op, ins, outs, **kw: wide.append(h.make_node(op, ins, outs, **kw))
    n("Conv", [t, f"cw{i}", f"cb{i}"], [f"c{i}"], **ca)
    if relu:
        n("Relu", [f"c{i}"], [f"a{i}"])
    n("Resize", [f"a{i}" if relu else f"c{i}", "", f"up{i}"], [f"r{i}"], mode="linear", coordinate_transformation_mode=mode)
    n("DynamicQuantizeLinear", [f"r{i}"], [f"q{i}", f"s{i}", f"z{i}"])
    wide_inits += [(f"cw{i}", f32(*cw, scale=0.3)), (f"cb{i}", f32(cw[0], scale=0.1)),
                   (f"up{i}", np.array([1, 1, up, up], np.float32))]
    if qw is None:
        break
    n("ConvInteger", [f"q{i}", f"qw{i}", f"z{i}", f"qz{i}"], [f"ci{i}"], **qa)
    n("Cast", [f"ci{i}"], [f"cf{i}"], to=F)
    n("Mul", [f"s{i}", f"qs{i}"], [f"sc{i}"])
    n("Mul", [f"cf{i}", f"sc{i}"], [f"d{i}"])
    wide_inits += [(f"qw{i}", rng.integers(0, 256, qw).astype(np.uint8)),
                   (f"qz{i}", np.array(rng.integers(100, 156), np.uint8)),
                   (f"qs{i}", np.array(rng.uniform(1e-3, 4e-3) / qw[1], np.float32))]
    t = f"d{i}"
save("dynamic_quant_chain_wide", wide, {"x": f32(1, 3, 64, 64)},
     [("d2", F), ("r3", F), ("q3", T.UINT8), ("s3", F), ("z3", T.UINT8)], 13, wide_inits)

# The chain as onnxruntime's quantize_dynamic writes a network whose every Conv is quantized: no
# float Conv, each layer DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul by x_scale * w_scale
# -> Add of the bias, then Resize (linear, x2). Every float operation is elementwise or the
# Resize, whose order tgc keeps as onnxruntime's: bit for bit (exact.txt) through three layers.
qchain, qinits, t = [], [], "x"
for i in range(3):
    n = lambda op, ins, outs, **kw: qchain.append(h.make_node(op, ins, outs, **kw))
    n("DynamicQuantizeLinear", [t], [f"q{i}", f"s{i}", f"z{i}"])
    n("ConvInteger", [f"q{i}", f"qw{i}", f"z{i}", f"qz{i}"], [f"ci{i}"], pads=[1, 1, 1, 1])
    n("Cast", [f"ci{i}"], [f"cf{i}"], to=F)
    n("Mul", [f"s{i}", f"qs{i}"], [f"sc{i}"])
    n("Mul", [f"cf{i}", f"sc{i}"], [f"m{i}"])
    n("Add", [f"m{i}", f"b{i}"], [f"a{i}"])
    n("Resize", [f"a{i}", "", "up"], [f"r{i}"], mode="linear")
    qinits += [(f"qw{i}", rng.integers(0, 256, (8, 3 if i == 0 else 8, 3, 3)).astype(np.uint8)),
               (f"qz{i}", np.array(rng.integers(100, 156), np.uint8)),
               (f"qs{i}", np.array(rng.uniform(1e-3, 4e-3), np.float32)), (f"b{i}", f32(8, 1, 1, scale=0.1))]
    t = f"r{i}"
qinits.append(("up", np.array([1, 1, 2, 2], np.float32)))
save("dynamic_quant_chain_int", qchain, {"x": f32(1, 3, 16, 16)},
     [("r2", F), ("q2", T.UINT8), ("s2", F), ("z2", T.UINT8)], 13, qinits)

# Compared with --max-rel 0: every output bit for bit (float scales included).
with open(os.path.join(out_dir, "exact.txt"), "w") as f:
    f.write("quantize_linear_ties\ndynamic_quantize_linear\nqlinearconv_per_channel\nresize_linear_dq\n"
            "dynamic_quant_chain_int\ndynamic_quant_chain\ndynamic_quant_chain_wide\n")

# Models compared with their own tolerance (compare_npy.py options), not 1e-4.
with open(os.path.join(out_dir, "tolerances.txt"), "w") as f:
    f.write("")

with open(os.path.join(out_dir, "manifest.txt"), "w") as f:
    f.write("\n".join(manifest) + "\n")
