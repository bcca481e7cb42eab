#!/usr/bin/env bash
# Dynamic dims (frontend/onnx/dynamic_dims.h). A run-time batch: models compiled without a batch
# size run at any batch size and match the reference interpreter (tgc eval at that size) and
# onnxruntime; the artifact's CLI and C API bind it; models whose nodes mix samples get a clear
# compile error. Run-time dims (--dynamic): an attention block compiled once for sequence lengths
# up to 16 matches tgc eval at lengths 1, 5 and 16 (cpu; qcom at 5) and onnxruntime at 9; a
# convolution model (pads, strided convs, a pool) over a length up to 32 matches onnxruntime at
# 4, 9, 13 and 32, also run in turn by one model object (C API), and on qcom at 9. Real models:
# the OCR models over widths and sizes, the audio models over sample counts, Silero VAD v5 with
# its sample rate at run time too (an If on it).
# usage: dynamic_dims.sh TGC_BINARY REPO_ROOT   (TGC_REAL_MODELS overrides the real model dir)
set -uo pipefail
tgc="$1"; root="$2"
real="${TGC_REAL_MODELS:-$root/../shared/models/real}"
ort="$root/tools/ort/ort_run.js"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
compare() { /usr/bin/python3 "$root/tests/integration/compare_npy.py" "$@" || fail=1; }
source "$root/tests/integration/real_models_lib.sh"  # real_model_inputs
expect_error() {  # description, expected substring, command...
  local what="$1" want="$2"; shift 2
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  if [ $rc -ne 1 ] || [ "$(wc -l <"$work/err")" -ne 1 ] || ! grep -qF -- "$want" "$work/err"; then
    echo "FAIL $what: rc=$rc, stderr:"; cat "$work/err"; fail=1
  else
    echo "ok   $what: $(cat "$work/err")"
  fi
}

/usr/bin/python3 - "$work" <<'PY' || { echo "FAIL making the test models"; exit 1; }
import sys, numpy as np, onnx
from onnx import helper, TensorProto as T
d = sys.argv[1]
def save(name, nodes, inputs, outputs, inits=()):
    onnx.save(helper.make_model(helper.make_graph(nodes, name, inputs, outputs, list(inits)),
                                opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}.onnx")
vi = lambda n, shape: helper.make_tensor_value_info(n, T.FLOAT, shape)
w = helper.make_tensor("w", T.FLOAT, [4], [1, 2, 3, 4])
axes = helper.make_tensor("axes", T.INT64, [1], [1])
# z = x * y + w, s = sum over axis 1: samples stay apart.
save("dyn", [helper.make_node("Mul", ["x", "y"], ["p"]), helper.make_node("Add", ["p", "w"], ["z"]),
             helper.make_node("ReduceSum", ["z", "axes"], ["s"], keepdims=0)],
     [vi("x", ["N", 4]), vi("y", ["N", 4])], [vi("z", ["N", 4]), vi("s", ["N"])], [w, axes])
# Normalising by the batch's mean mixes samples.
save("mixing", [helper.make_node("ReduceMean", ["x"], ["m"], axes=[0], keepdims=1, name="batch_mean"),
                helper.make_node("Sub", ["x", "m"], ["z"])], [vi("x", ["N", 4])], [vi("z", ["N", 4])])
# A second symbolic dim needs a size.
save("two_dims", [helper.make_node("Relu", ["x"], ["z"])], [vi("x", ["N", "T"])], [vi("z", ["N", "T"])])
r = np.random.default_rng(0)
for n in (1, 3):
    np.save(f"{d}/x{n}.npy", r.standard_normal((n, 4)).astype(np.float32))
    np.save(f"{d}/y{n}.npy", r.standard_normal((n, 4)).astype(np.float32))
np.save(f"{d}/emb3.npy", r.standard_normal((3, 76, 32, 1)).astype(np.float32))
# Self-attention over a sequence of length "seq" with a position table cut to the length.
from onnx import numpy_helper as nh
D = 16
W = lambda name, *shape: nh.from_array((r.standard_normal(shape) * 0.3).astype(np.float32), name)
i64 = lambda name, v: nh.from_array(np.array(v, np.int64), name)
attn_inits = [W("wq", D, D), W("wk", D, D), W("wv", D, D), W("pos", 64, D), i64("zero", [0]), i64("one", [1]),
              i64("two", [2]), nh.from_array(np.array(0.25, np.float32), "scale"),
              nh.from_array(np.ones(D, np.float32), "g"), nh.from_array(np.zeros(D, np.float32), "b")]
n = helper.make_node
attn = [n("Shape", ["x"], ["xs"]), n("Slice", ["xs", "one", "two"], ["len"]), n("Slice", ["pos", "zero", "len", "zero"], ["p"]),
        n("Add", ["x", "p"], ["h"]), n("MatMul", ["h", "wq"], ["q"]), n("MatMul", ["h", "wk"], ["k"]),
        n("MatMul", ["h", "wv"], ["v"]), n("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), n("MatMul", ["q", "kt"], ["s0"]),
        n("Mul", ["s0", "scale"], ["s"]), n("Softmax", ["s"], ["a"], axis=-1), n("MatMul", ["a", "v"], ["o"]),
        n("Add", ["o", "h"], ["res"]), n("LayerNormalization", ["res", "g", "b"], ["y"], axis=-1)]
x_seq = vi("x", [1, "seq", D])
onnx.save(helper.make_model(helper.make_graph(attn, "attn", [x_seq], [vi("y", [1, "seq", D]), vi("a", [1, "seq", "seq"])], attn_inits),
                            opset_imports=[helper.make_opsetid("", 17)]), f"{d}/attn.onnx")
# A mean over the sequence divides by its length: a constant of the traced length.
onnx.save(helper.make_model(helper.make_graph(attn + [n("ReduceMean", ["y"], ["m"], axes=[1], keepdims=0, name="seq_mean")],
                                              "attn_mean", [x_seq], [vi("m", [1, D])], attn_inits),
                            opset_imports=[helper.make_opsetid("", 17)]), f"{d}/attn_mean.onnx")
for t in (1, 5, 9, 16):
    np.save(f"{d}/seq{t}.npy", r.standard_normal((1, t, D)).astype(np.float32))
# The same with a symbolic batch "N": two run-time dims.
x_nseq = vi("x", ["N", "seq", D])
onnx.save(helper.make_model(helper.make_graph(attn, "attn_n", [x_nseq], [vi("y", ["N", "seq", D]), vi("a", ["N", "seq", "seq"])], attn_inits),
                            opset_imports=[helper.make_opsetid("", 17)]), f"{d}/attn_n.onnx")
np.save(f"{d}/n3seq7.npy", r.standard_normal((3, 7, D)).astype(np.float32))
# Convolutions, pads and pools over a run-time length T (unnamed dim: --dynamic x:2=32): a "same"
# branch keeps T, a strided branch (conv stride 2, max pool 2) ends in a max over its length.
C = 6
conv_inits = [W("k1", C, 4, 3), W("k2", C, C, 3), W("k3", C, 4, 5), W("b1", C), i64("pads", [0, 0, 3, 0, 0, 1])]
conv = [n("Conv", ["x", "k1", "b1"], ["c1"], pads=[1, 1], name="conv_same"), n("Relu", ["c1"], ["r1"]),
        n("Conv", ["r1", "k2"], ["c2"], pads=[1, 1], strides=[2], name="conv_s2"), n("Relu", ["c2"], ["r2"]),
        n("MaxPool", ["r2"], ["p2"], kernel_shape=[2], strides=[2], name="pool"),
        n("ReduceMax", ["p2"], ["head"], axes=[2], keepdims=1, name="head"),
        n("Pad", ["x", "pads"], ["xp"], name="pad"), n("Conv", ["xp", "k3"], ["c3"], pads=[0, 0], name="conv_valid"),
        n("Add", ["c3", "c1"], ["y"]),
        # Means over the length and over the strided branch's length: 1 / a run-time count.
        n("GlobalAveragePool", ["r2"], ["gap"], name="gap"), n("ReduceMean", ["c1"], ["mean"], axes=[2], keepdims=0, name="mean")]
onnx.save(helper.make_model(helper.make_graph(conv, "conv_t", [vi("x", [1, 4, None])],
                                              [vi("y", [1, C, None]), vi("head", [1, C, 1]), vi("gap", [1, C, 1]), vi("mean", [1, C])], conv_inits),
                            opset_imports=[helper.make_opsetid("", 13)]), f"{d}/conv_t.onnx")
for t in (4, 9, 13, 32):
    np.save(f"{d}/t{t}.npy", r.standard_normal((1, 4, t)).astype(np.float32))
# A nearest upsample (Resize x2) over the length, then a conv: the output's length is 2T.
up = [n("Resize", ["x", "", "sc"], ["u"], mode="nearest"), n("Conv", ["u", "k1"], ["y"], pads=[1, 1])]
onnx.save(helper.make_model(helper.make_graph(up, "up_t", [vi("x", [1, 4, None])], [vi("y", [1, C, None])],
                                              [conv_inits[0], nh.from_array(np.array([1, 1, 2], np.float32), "sc")]),
                            opset_imports=[helper.make_opsetid("", 13)]), f"{d}/up_t.onnx")
# Two run-time dims in multiples of 8 (--dynamic H=32/8 --dynamic W=32/8): a strided conv whose
# output is upsampled and added to the full-resolution branch (a detector's FPN: the sizes agree
# only for multiples of the stride), and a mean over both dims (1 / H*W at run time).
k2d = [W("q1", C, 4, 3, 3), W("q2", C, C, 3, 3), W("qb", C), nh.from_array(np.array([1, 1, 2, 2], np.float32), "sc2")]
fpn = [n("Conv", ["x", "q1", "qb"], ["c1"], pads=[1, 1, 1, 1]), n("Relu", ["c1"], ["r1"]),
       n("Conv", ["r1", "q2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]), n("Relu", ["c2"], ["r2"]),
       n("Resize", ["r2", "", "sc2"], ["u"], mode="nearest"), n("Add", ["u", "r1"], ["y"]),
       n("ReduceMean", ["y"], ["m"], axes=[2, 3], keepdims=0)]
onnx.save(helper.make_model(helper.make_graph(fpn, "fpn", [vi("x", [1, 4, "H", "W"])], [vi("y", [1, C, "H", "W"]), vi("m", [1, C])], k2d),
                            opset_imports=[helper.make_opsetid("", 13)]), f"{d}/fpn.onnx")
# Two stride-2 convs, a nearest upsample x4 and an Add with the full-resolution branch: the sizes
# (ceil(ceil(H / 2) / 2) * 4 and H) agree for multiples of 4 only, which the error says.
fpn4 = [n("Conv", ["x", "q1", "qb"], ["c1"], pads=[1, 1, 1, 1]),
        n("Conv", ["c1", "q2"], ["c2"], pads=[1, 1, 1, 1], strides=[2, 2]), n("Relu", ["c2"], ["r2"]),
        n("Conv", ["r2", "q2"], ["c3"], pads=[1, 1, 1, 1], strides=[2, 2]),
        n("Resize", ["c3", "", "sc4"], ["u"], mode="nearest"), n("Add", ["u", "c1"], ["y"])]
onnx.save(helper.make_model(helper.make_graph(fpn4, "fpn4", [vi("x", [1, 4, "H", "W"])], [vi("y", [1, C, "H", "W"])],
                                              k2d[:3] + [nh.from_array(np.array([1, 1, 4, 4], np.float32), "sc4")]),
                            opset_imports=[helper.make_opsetid("", 13)]), f"{d}/fpn4.onnx")
for hw in ((12, 20), (4, 28)):
    np.save(f"{d}/hw{hw[0]}_{hw[1]}.npy", r.standard_normal((1, 4) + hw).astype(np.float32))
for hw in ((16, 32), (8, 8), (24, 16), (32, 32)):
    np.save(f"{d}/hw{hw[0]}_{hw[1]}.npy", r.standard_normal((1, 4) + hw).astype(np.float32))
np.save(f"{d}/cls2.npy", r.standard_normal((2, 3, 48, 192)).astype(np.float32))
np.save(f"{d}/rec2.npy", r.standard_normal((2, 3, 48, 320)).astype(np.float32))
for w in (40, 77, 192):
    np.save(f"{d}/clsw{w}.npy", r.standard_normal((1, 3, 48, w)).astype(np.float32))
for w in (80, 100, 160, 320):
    np.save(f"{d}/recw{w}.npy", r.standard_normal((1, 3, 48, w)).astype(np.float32))
PY

echo "== a small model: artifacts (cpu, qcom) vs tgc eval at batch 1 and 3"
"$tgc" compile "$work/dyn.onnx" -o "$work/dyn" 2>"$work/log" || { cat "$work/log"; fail=1; }
grep -qF "dim 'N' is the batch size, bound at run time" "$work/log" || { echo "FAIL no batch-dim note"; cat "$work/log"; fail=1; }
"$work/dyn" --info | grep -q "x: f32\[N,4\]" || { echo "FAIL --info does not show x: f32[N,4]"; "$work/dyn" --info; fail=1; }
for n in 1 3; do
  "$work/dyn" -i x="$work/x$n.npy" -i y="$work/y$n.npy" -o "$work/tgc$n" >/dev/null || fail=1
  "$tgc" eval "$work/dyn.onnx" -i x="$work/x$n.npy" -i y="$work/y$n.npy" -o "$work/ref$n" || fail=1
  compare "$work/tgc$n" "$work/ref$n" --max-rel 1e-6
done
# --target=qcom: the OpenCL backend (pocl here) writes and reads each sample's slices.
"$tgc" compile "$work/dyn.onnx" --target=qcom --triple=x86_64-linux-gnu -o "$work/dyncl" 2>/dev/null || fail=1
"$work/dyncl" -i x="$work/x3.npy" -i y="$work/y3.npy" -o "$work/cl3" >/dev/null || fail=1
compare "$work/cl3" "$work/ref3" --max-rel 1e-6
"$work/dyn" --batch 5 | grep -qF "z: f32[5,4]" || { echo "FAIL --batch 5 does not give z: f32[5,4]"; fail=1; }
expect_error "inputs disagree on the batch" "batch size N=1, but input 'x' has 3" "$work/dyn" -i x="$work/x3.npy" -i y="$work/y1.npy"
expect_error "--batch against the files" "--batch 2, but input 'x' has batch size 3" "$work/dyn" --batch 2 -i x="$work/x3.npy" -i y="$work/y3.npy"
"$tgc" compile "$root/models/digits_cnn.onnx" -o "$work/digits" 2>/dev/null || fail=1
expect_error "--batch on a static model" "has no run-time batch dim" "$work/digits" --batch 2

echo "== the C API binds the batch"
"$tgc" compile "$work/dyn.onnx" --shared -o "$work/libdyn.so" 2>/dev/null || fail=1
grep -qF -- "-1 is the batch size 'N'" "$work/dyn.h" || { echo "FAIL dyn.h does not explain -1"; fail=1; }
cc -O1 -I"$work" "$root/tests/integration/c_api/dynamic_batch.c" -L"$work" -ldyn -Wl,-rpath,"$work" -o "$work/c_api" && "$work/c_api" || fail=1

echo "== what must stay static"
expect_error "a node mixes samples" "node 'ReduceMean batch_mean' (REDUCE) reduces over the batch dim" "$tgc" compile "$work/mixing.onnx" -o "$work/m"
expect_error "another symbolic dim" "input 'x' dim 0 ('N'), dim 1 ('T'): --input-shape x=<N>,<T> (dim 'N' (axis 0 of 'x') can stay dynamic: write it as ?)" \
  "$tgc" compile "$work/two_dims.onnx" -o "$work/m"
[ ! -e "$work/m" ] || { echo "FAIL a failed compile left an artifact"; fail=1; }
"$tgc" compile "$work/two_dims.onnx" --input-shape x=?,7 -o "$work/two" 2>/dev/null && "$work/two" --batch 2 | grep -qF "z: f32[2,7]" \
  || { echo "FAIL --input-shape x=?,7"; fail=1; }

echo "== run-time dims: attention compiled once for sequence lengths 1 to 16"
# The kernels listing shows a range over a run-time dim by its VAR (once an internal error).
"$tgc" inspect "$work/attn.onnx" --dynamic seq=64 --stage=kernels >"$work/kernels" 2>&1 || { echo "FAIL inspect --stage=kernels with a run-time dim"; cat "$work/kernels"; fail=1; }
grep -q "global=\[.*seq<=64" "$work/kernels" || { echo "FAIL inspect --stage=kernels does not show seq<=64"; fail=1; }
"$tgc" compile "$work/attn.onnx" --dynamic seq=16 -o "$work/attn" 2>"$work/log" || { cat "$work/log"; fail=1; }
grep -qF "dim 'seq' is bound at run time (1 to 16)" "$work/log" || { echo "FAIL no run-time dim note"; cat "$work/log"; fail=1; }
"$work/attn" --info | grep -q "a: f32\[1,seq,seq\]" || { echo "FAIL --info does not show a: f32[1,seq,seq]"; fail=1; }
for t in 1 5 16; do
  "$work/attn" -i x="$work/seq$t.npy" -o "$work/attn$t" >/dev/null || fail=1
  "$tgc" eval "$work/attn.onnx" -i x="$work/seq$t.npy" -o "$work/attn_ref$t" || fail=1
  compare "$work/attn$t" "$work/attn_ref$t" --max-rel 1e-5
done
"$tgc" compile "$work/attn_n.onnx" --dynamic N=4 --dynamic seq=16 -o "$work/attn_n" 2>/dev/null || fail=1
"$work/attn_n" -i x="$work/n3seq7.npy" -o "$work/attn_n37" >/dev/null || fail=1
"$tgc" eval "$work/attn_n.onnx" -i x="$work/n3seq7.npy" -o "$work/attn_n37_ref" || fail=1
compare "$work/attn_n37" "$work/attn_n37_ref" --max-rel 1e-5
"$work/attn" --dim seq=3 | grep -qF "a: f32[1,3,3]" || { echo "FAIL --dim seq=3 does not give a: f32[1,3,3]"; fail=1; }
expect_error "a length past the bound" "run-time dim 'seq' must be 1 to 16, got 17" "$work/attn" --dim seq=17
expect_error "--dim against the files" "input 'x' has seq=5, but --dim gives 4" "$work/attn" -i x="$work/seq5.npy" --dim seq=4
# A mean over the length would multiply by 1 / the run-time length (conv_t's means do), but at
# the bound 1/16 is also the LayerNorm's 1/16 (one node in the traced graph, two at length 9).
expect_error "a mean over the length whose scale is another constant at the bound" "dim 'seq' cannot be bound at run time: node 'ReduceMean seq_mean'" \
  "$tgc" compile "$work/attn_mean.onnx" --dynamic seq=16 -o "$work/m"
expect_error "--dynamic of an unknown dim" "--dynamic sq: no input has a symbolic dim of that name" \
  "$tgc" compile "$work/attn.onnx" --dynamic sq=16 -o "$work/m"
echo "== run-time dims through convolutions, pads and pools: lengths 4 to 32 vs onnxruntime"
"$tgc" inspect "$work/conv_t.onnx" --dynamic x:2=32 --stage=kernels >"$work/conv_kernels" 2>&1 || { echo "FAIL inspect conv_t"; cat "$work/conv_kernels"; fail=1; }
grep -q "global=\[.*<=16" "$work/conv_kernels" || { echo "FAIL the strided conv's kernel does not loop to a run-time size <=16"; cat "$work/conv_kernels"; fail=1; }
"$tgc" compile "$work/conv_t.onnx" --dynamic x:2=32 -o "$work/conv_t" 2>"$work/log" || { cat "$work/log"; fail=1; }
for t in 4 9 13 32; do
  "$work/conv_t" -i x="$work/t$t.npy" -o "$work/conv_t$t" >/dev/null || { echo "FAIL conv_t at $t"; fail=1; }
  node "$ort" "$work/conv_t.onnx" -i x="$work/t$t.npy" -o "$work/conv_t$t.ort" >/dev/null
  echo "length $t:"; compare "$work/conv_t$t" "$work/conv_t$t.ort" --max-rel 1e-5
done
"$tgc" compile "$work/fpn.onnx" --dynamic H=32/8 --dynamic W=32/8 -o "$work/fpn" 2>/dev/null || { echo "FAIL compile fpn"; fail=1; }
"$work/fpn" --info | grep -qF "run-time dim: H (8 to 32 in multiples of 8" || { echo "FAIL --info does not show H's step"; fail=1; }
for hw in 16_32 8_8 24_16 32_32; do
  "$work/fpn" -i x="$work/hw$hw.npy" -o "$work/fpn$hw" >/dev/null || { echo "FAIL fpn at $hw"; fail=1; }
  node "$ort" "$work/fpn.onnx" -i x="$work/hw$hw.npy" -o "$work/fpn$hw.ort" >/dev/null
  echo "H x W $hw:"; compare "$work/fpn$hw" "$work/fpn$hw.ort" --max-rel 1e-5
done
expect_error "a size that is not a multiple of the step" "run-time dim H is 12, not a multiple of 8" "$work/fpn" --dim H=12
# The error names the step at which the sizes agree, and the flag to write. At H=17 (the second
# trace of a bound of 32) the model does not build at all; traced at 16, the sizes show the step.
expect_error "fpn4: sizes that agree at multiples of 4 (H)" \
  "the model does not build at H=17 (node '#5' (Add, opset 13): shapes [1,6,20,32] and [1,6,17,32] do not broadcast); node 'Add #5' (ADD) combines tensors whose run-time sizes differ along axis 2 ((((((H+1)//2)+1)//2)*4) and H); they agree when 'H' is a multiple of 4: --dynamic H=32/4; or give it a size with --input-shape" \
  "$tgc" compile "$work/fpn4.onnx" --dynamic H=32 --dynamic W=32 -o "$work/fpn4"
expect_error "fpn4: a step given that is still too small" "they agree when 'H' is a multiple of 4: --dynamic H=32/4; or give" \
  "$tgc" compile "$work/fpn4.onnx" --dynamic H=32/2 --dynamic W=32/4 -o "$work/fpn4"
expect_error "fpn4: sizes that agree at multiples of 4 (W)" "they agree when 'W' is a multiple of 4: --dynamic W=36/4; or give" \
  "$tgc" compile "$work/fpn4.onnx" --dynamic H=32/4 --dynamic W=36 -o "$work/fpn4"
"$tgc" compile "$work/fpn4.onnx" --dynamic H=32/4 --dynamic W=36/4 -o "$work/fpn4" 2>/dev/null || { echo "FAIL compile fpn4 with the hinted flags"; fail=1; }
for hw in 12_20 4_28 8_8 32_32; do
  "$work/fpn4" -i x="$work/hw$hw.npy" -o "$work/fpn4$hw" >/dev/null || { echo "FAIL fpn4 at $hw"; fail=1; }
  node "$ort" "$work/fpn4.onnx" -i x="$work/hw$hw.npy" -o "$work/fpn4$hw.ort" >/dev/null
  echo "fpn4 H x W $hw:"; compare "$work/fpn4$hw" "$work/fpn4$hw.ort" --max-rel 1e-5
done
# One model object at lengths 32, 9, 4, 13: the first run leaves values past the shorter lengths,
# which a pad mask or reduce at the layout's size would read.
"$tgc" compile "$work/conv_t.onnx" --dynamic x:2=32 --shared -o "$work/libconv_t.so" 2>/dev/null || fail=1
cc -O1 -I"$work" "$root/tests/integration/c_api/conv_lengths.c" -L"$work" -lconv_t -lm -Wl,-rpath,"$work" -o "$work/conv_lengths" || fail=1
"$work/conv_lengths" "$work/t32.npy" "$work/conv_t32.ort" "$work/t9.npy" "$work/conv_t9.ort" "$work/t4.npy" "$work/conv_t4.ort" \
  "$work/t13.npy" "$work/conv_t13.ort" || fail=1
"$tgc" compile "$work/up_t.onnx" --dynamic x:2=32 -o "$work/up_t" 2>/dev/null || { echo "FAIL compile up_t"; fail=1; }
"$work/up_t" --info | grep -qF "y: f32[1,6,?]" || { echo "FAIL --info does not show the upsampled length as ?"; fail=1; }
for t in 9 32; do
  "$work/up_t" -i x="$work/t$t.npy" -o "$work/up_t$t" >/dev/null || { echo "FAIL up_t at $t"; fail=1; }
  node "$ort" "$work/up_t.onnx" -i x="$work/t$t.npy" -o "$work/up_t$t.ort" >/dev/null
  echo "upsampled, length $t:"; compare "$work/up_t$t" "$work/up_t$t.ort" --max-rel 1e-5
done
"$tgc" compile "$work/conv_t.onnx" --dynamic x:2=32 --target=qcom --triple=x86_64-linux-gnu -o "$work/conv_t_cl" 2>/dev/null || fail=1
"$work/conv_t_cl" -i x="$work/t9.npy" -o "$work/conv_t_cl9" >/dev/null || fail=1
echo "qcom, length 9:"; compare "$work/conv_t_cl9" "$work/conv_t9.ort" --max-rel 1e-5
# --target=qcom: OpenCL kernels read the length from the vars buffer too (pocl here).
"$tgc" compile "$work/attn.onnx" --dynamic seq=16 --target=qcom --triple=x86_64-linux-gnu -o "$work/attn_cl" 2>/dev/null || fail=1
"$work/attn_cl" -i x="$work/seq5.npy" -o "$work/attn_cl5" >/dev/null || fail=1
compare "$work/attn_cl5" "$work/attn_ref5" --max-rel 1e-5
# --target=vulkan where a Vulkan device exists (lavapipe in CI), validation layer on, with the
# kernels' memory used directly and through staging copies (TGC_VK_STAGING=1, the discrete-GPU
# path): a batch replays the command buffer per sample; run-time dims are read from the vars
# buffer's low words (no kernel needs 64-bit integers), and one model run at lengths 5, 16, 1, 5
# re-records it where a launch's work changes.
if "$root/tests/integration/vulkan_device.sh" "$tgc" "$root" >/dev/null; then
  "$tgc" compile "$work/dyn.onnx" --target=vulkan -o "$work/dynvk" 2>/dev/null || fail=1
  "$tgc" compile "$work/attn.onnx" --dynamic seq=16 --target=vulkan -o "$work/attn_vk" 2>/dev/null || fail=1
  "$tgc" compile "$work/attn.onnx" --dynamic seq=16 --target=vulkan --shared -o "$work/libattn.so" 2>/dev/null || fail=1
  cc -O1 -I"$work" "$root/tests/integration/c_api/run_lengths.c" -L"$work" -lattn -lm -Wl,-rpath,"$work" -o "$work/run_lengths" || fail=1
  for staging in 0 1; do
    echo "== vulkan, TGC_VK_STAGING=$staging"
    export TGC_VK_STAGING=$staging TGC_VK_VALIDATION=1
    "$work/dynvk" -i x="$work/x3.npy" -i y="$work/y3.npy" -o "$work/vk3" >/dev/null || fail=1
    compare "$work/vk3" "$work/ref3" --max-rel 1e-6
    for t in 5 16; do
      "$work/attn_vk" -i x="$work/seq$t.npy" -o "$work/attn_vk$t" >/dev/null || fail=1
      compare "$work/attn_vk$t" "$work/attn_ref$t" --max-rel 1e-5
    done
    "$work/run_lengths" "$work/seq5.npy" "$work/attn_ref5" "$work/seq16.npy" "$work/attn_ref16" \
      "$work/seq1.npy" "$work/attn_ref1" "$work/seq5.npy" "$work/attn_ref5" || fail=1
    unset TGC_VK_STAGING TGC_VK_VALIDATION
  done
  # Sizes through pads, windows and means (GLSL computes the loop ends from the vars buffer).
  "$tgc" compile "$work/conv_t.onnx" --dynamic x:2=32 --target=vulkan -o "$work/conv_vk" 2>/dev/null || fail=1
  TGC_VK_VALIDATION=1 "$work/conv_vk" -i x="$work/t9.npy" -o "$work/conv_vk9" >/dev/null || fail=1
  echo "vulkan, length 9:"; compare "$work/conv_vk9" "$work/conv_t9.ort" --max-rel 1e-5
  "$tgc" inspect "$work/attn.onnx" --dynamic seq=16 --target=vulkan --stage=blob -o "$work/attn_spv" >/dev/null || fail=1
  for f in "$work"/attn_spv/*.bin; do
    spirv-dis "$f" >"$work/dis"
    if grep -q "OpCapability Int64" "$work/dis"; then echo "FAIL $(basename "$f") needs Int64 (run-time dims should be 32-bit words)"; fail=1; fi
  done
  "$tgc" inspect "$work/attn.onnx" --dynamic seq=16 --target=vulkan --stage=source >"$work/glsl" 2>&1 || fail=1
  grep -q "tgc_vars\[0\]" "$work/glsl" || { echo "FAIL no kernel of the attention block reads the vars buffer"; fail=1; }
else
  echo "note: no Vulkan device here, the vulkan cases are skipped"
fi

if [ -d "$real" ] && [ -d "$root/tools/ort/node_modules/onnxruntime-node" ]; then
  echo "== attention at length 9 vs onnxruntime"
  "$work/attn" -i x="$work/seq9.npy" -o "$work/attn9" >/dev/null || fail=1
  node "$ort" "$work/attn.onnx" -i x="$work/seq9.npy" -o "$work/attn9.ort" >/dev/null
  compare "$work/attn9" "$work/attn9.ort" --max-rel 1e-4
  echo "== real models at batch > 1 vs onnxruntime"
  real_case() {  # name, model, compile args, input name, input file
    "$tgc" compile "$real/$2" $3 -o "$work/$1" 2>/dev/null || { echo "FAIL compile $1"; fail=1; return; }
    "$work/$1" -i "$4=$work/$5" -o "$work/$1.tgc" >/dev/null || { echo "FAIL run $1"; fail=1; return; }
    node "$ort" "$real/$2" -i "$4=$work/$5" -o "$work/$1.ort" >/dev/null
    compare "$work/$1.tgc" "$work/$1.ort" --max-rel 1e-4
  }
  real_case embedding embedding_model.onnx "" input_1 emb3.npy
  real_case cls ch_ppocr_mobile_v2.0_cls_infer.onnx "--input-shape x=?,3,48,192" x cls2.npy
  real_case rec ch_PP-OCRv4_rec_infer.onnx "--input-shape x=?,3,48,320" x rec2.npy
  echo "== the OCR direction classifier (strided convs, SE means) with a run-time width up to 192 vs onnxruntime"
  "$tgc" compile "$real/ch_ppocr_mobile_v2.0_cls_infer.onnx" --input-shape x=1,3,48,? --dynamic p2o.DynamicDimension.2=192 \
    -o "$work/cls_w" 2>/dev/null || { echo "FAIL compile cls with a run-time width"; fail=1; }
  for w in 40 77 192; do
    "$work/cls_w" -i x="$work/clsw$w.npy" -o "$work/cls_w$w" >/dev/null || { echo "FAIL cls at width $w"; fail=1; }
    node "$ort" "$real/ch_ppocr_mobile_v2.0_cls_infer.onnx" -i x="$work/clsw$w.npy" -o "$work/cls_w$w.ort" >/dev/null
    echo "width $w:"; compare "$work/cls_w$w" "$work/cls_w$w.ort" --max-rel 1e-4
  done
  echo "== the OCR recogniser (convs, pools, attention, output length W/8) with a run-time width up to 320 vs onnxruntime"
  "$tgc" compile "$real/ch_PP-OCRv4_rec_infer.onnx" --input-shape x=1,3,48,? --dynamic p2o.DynamicDimension.1=320 \
    -o "$work/rec_w" 2>/dev/null || { echo "FAIL compile rec with a run-time width"; fail=1; }
  "$work/rec_w" --info | grep -qF "softmax_11.tmp_0: f32[1,?,6625]" || { echo "FAIL --info does not show the derived output length as ?"; fail=1; }
  for w in 80 100 160 320; do
    "$work/rec_w" -i x="$work/recw$w.npy" -o "$work/rec_w$w" >/dev/null || { echo "FAIL rec at width $w"; fail=1; }
    node "$ort" "$real/ch_PP-OCRv4_rec_infer.onnx" -i x="$work/recw$w.npy" -o "$work/rec_w$w.ort" >/dev/null
    echo "width $w:"; compare "$work/rec_w$w" "$work/rec_w$w.ort" --max-rel 1e-4
  done
  echo "== the OCR detector (FPN, ConvTranspose) with run-time H and W in multiples of 32 vs onnxruntime"
  "$tgc" compile "$real/ch_PP-OCRv4_det_infer.onnx" --input-shape x=1,3,?,? --dynamic p2o.DynamicDimension.1=320/32 \
    --dynamic p2o.DynamicDimension.2=320/32 -o "$work/det_hw" 2>/dev/null || { echo "FAIL compile det with run-time H and W"; fail=1; }
  real_model_inputs "$work"
  /usr/bin/python3 -c "
import numpy as np, sys
x = np.load(sys.argv[1] + '/det_x.npy')
for h, w in ((320, 320), (160, 224), (96, 320)):
    np.save(f'{sys.argv[1]}/det{h}x{w}.npy', np.ascontiguousarray(x[:, :, :h, :w]))" "$work"
  for hw in 320x320 160x224 96x320; do
    "$work/det_hw" -i x="$work/det$hw.npy" -o "$work/det_hw$hw" >/dev/null || { echo "FAIL det at $hw"; fail=1; }
    node "$ort" "$real/ch_PP-OCRv4_det_infer.onnx" -i x="$work/det$hw.npy" -o "$work/det_hw$hw.ort" >/dev/null
    echo "H x W $hw:"; compare "$work/det_hw$hw" "$work/det_hw$hw.ort" --max-rel 1e-4
  done
  echo "== audio models (STFT by strided conv, reflect pads, strided encoders down to one frame) with a run-time sample count vs onnxruntime"
  /usr/bin/python3 -c "
import numpy as np, sys
r = np.random.default_rng(7)
for n in (16000, 4000, 512, 448, 320, 256, 200):
    np.save(f'{sys.argv[1]}/audio{n}.npy', (r.standard_normal((1, n)) * 0.2).astype(np.float32))
np.save(f'{sys.argv[1]}/h64.npy', (r.standard_normal((2, 1, 64)) * 0.1).astype(np.float32))
np.save(f'{sys.argv[1]}/c64.npy', (r.standard_normal((2, 1, 64)) * 0.1).astype(np.float32))
np.save(f'{sys.argv[1]}/state128.npy', (r.standard_normal((2, 1, 128)) * 0.1).astype(np.float32))
np.save(f'{sys.argv[1]}/sr16k.npy', np.array(16000, np.int64))
np.save(f'{sys.argv[1]}/sr8k.npy', np.array(8000, np.int64))" "$work"
  audio() {  # model, sizes, inputs beside 'input' (NAME=FILE), onnxruntime's alone (fixed for tgc), tgc compile flags...
    local model="$1" sizes="$2" extra="$3" fixed="$4"; shift 4
    "$tgc" compile "$real/$model.onnx" "$@" -o "$work/$model" 2>/dev/null || { echo "FAIL compile $model with a run-time sample count"; fail=1; return; }
    for n in $sizes; do
      local ins=(-i input="$work/audio$n.npy")
      for kv in $extra; do ins+=(-i "${kv%%=*}=$work/${kv#*=}"); done
      local ort_ins=("${ins[@]}")
      for kv in $fixed; do ort_ins+=(-i "${kv%%=*}=$work/${kv#*=}"); done
      "$work/$model" "${ins[@]}" -o "$work/${model}_$n" >/dev/null || { echo "FAIL $model at $n samples"; fail=1; continue; }
      node "$ort" "$real/$model.onnx" "${ort_ins[@]}" -o "$work/${model}_$n.ort" >/dev/null
      echo "$model, $n samples:"; compare "$work/${model}_$n" "$work/${model}_$n.ort" --max-rel 1e-4
    done
  }
  audio melspectrogram "16000 4000 512" "" "" --input-shape input=1,? --dynamic samples=16000
  audio silero_vad_legacy "512 448 320 256" "h=h64.npy c=c64.npy" "sr=sr16k.npy" --input-shape input=1,? --input-shape h=2,1,64 \
    --input-shape c=2,1,64 --input-value sr=16000 --dynamic sequence=512
  audio silero_vad_v5 "512 448 320 256" "state=state128.npy" "sr=sr16k.npy" --input-shape input=1,? --input-shape state=2,1,128 \
    --input-value sr=16000 --dynamic input:1=512
  # Below the least size where the traced structure holds (windows fit, reflect pads reach),
  # a dynamic compile refuses the size: Silero VAD v4 at 200 samples would be 13% off.
  expect_error "melspectrogram shorter than its STFT window" "run-time dim 'samples' must be 512 to 16000, got 200" \
    "$work/melspectrogram" -i input="$work/audio200.npy" -o "$work/mel_short"
  expect_error "silero_vad_legacy shorter than its structure holds" "run-time dim 'sequence' must be 256 to 512, got 200" \
    "$work/silero_vad_legacy" -i input="$work/audio200.npy" -i h="$work/h64.npy" -i c="$work/c64.npy" -o "$work/vad4_short"
  echo "== Silero VAD v5 with the sample rate at run time too (an If on it; its 8 kHz branch cannot be built at 512 samples) vs onnxruntime"
  "$tgc" compile "$real/silero_vad_v5.onnx" --input-shape input=1,? --input-shape state=2,1,128 --dynamic input:1=512 \
    -o "$work/sv5" 2>"$work/sv5.log" || { echo "FAIL compile silero_vad_v5 with sr at run time"; cat "$work/sv5.log"; fail=1; }
  grep -qF "runs only the branch it takes" "$work/sv5.log" || { echo "FAIL the If on sr is not a run-time branch:"; cat "$work/sv5.log"; fail=1; }
  for run in 512:16k 320:16k 256:8k 200:8k; do
    n="${run%%:*}" sr="${run#*:}"
    ins=(-i input="$work/audio$n.npy" -i state="$work/state128.npy" -i sr="$work/sr$sr.npy")
    "$work/sv5" "${ins[@]}" -o "$work/sv5_$run" >/dev/null || { echo "FAIL silero_vad_v5 at $n samples, sr $sr"; fail=1; continue; }
    node "$ort" "$real/silero_vad_v5.onnx" "${ins[@]}" -o "$work/sv5_$run.ort" >/dev/null
    echo "silero_vad_v5, $n samples at $sr:"; compare "$work/sv5_$run" "$work/sv5_$run.ort" --max-rel 1e-4
  done
  expect_error "silero_vad_v5 at 8 kHz with 512 samples (onnxruntime fails too)" \
    "these inputs fail a run-time check: If 'If_0' runs else_branch only for input:1 up to " \
    "$work/sv5" -i input="$work/audio512.npy" -i state="$work/state128.npy" -i sr="$work/sr8k.npy" -o "$work/sv5_bad"
  expect_error "melspectrogram normalises by the batch's max" "node 'ReduceMax ReduceMax_24' (REDUCE) reduces over the batch dim" \
    "$tgc" compile "$real/melspectrogram.onnx" --input-shape input=?,1280 -o "$work/mel"
else
  echo "FAIL real models or onnxruntime-node missing (tools/scripts/install-deps.sh)"; fail=1
fi
[ $fail -eq 0 ] && echo "dynamic dims: all checks passed"
exit $fail
