#!/usr/bin/env bash
# Bad input must give a one-line error naming what is wrong and exit status 1, never a crash.
# usage: bad_input.sh TGC_BINARY REPO_ROOT
set -uo pipefail
tgc="$1"; root="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
model="$root/models/digits_cnn.onnx"
fail=0

expect_error() {  # description, expected substring, command...
  local what="$1" want="$2"; shift 2
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  local lines; lines=$(wc -l <"$work/err")
  if [ $rc -ne 1 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$want" "$work/err"; then
    echo "FAIL $what: rc=$rc, stderr:"; cat "$work/err"; fail=1
  else
    echo "ok   $what: $(cat "$work/err")"
  fi
}

head -c 3000 "$model" >"$work/truncated.onnx"
head -c 4096 /dev/urandom >"$work/corrupt.onnx"
: >"$work/empty.onnx"
/usr/bin/python3 - "$work" <<'PY'
import sys, onnx
from onnx import helper, TensorProto as T
d = sys.argv[1]
x = helper.make_tensor_value_info("x", T.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", T.FLOAT, [2, 3])
def save(name, nodes, opset=13, inputs=(x,)):
    g = helper.make_graph(nodes, "g", list(inputs), [y])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]), f"{d}/{name}.onnx")
save("unknown_op", [helper.make_node("FancyOp", ["x"], ["y"], name="fancy")])
save("missing_input", [helper.make_node("Add", ["x", "w"], ["y"], name="add_w")])
save("cycle", [helper.make_node("Relu", ["z"], ["y"], name="r1"), helper.make_node("Relu", ["y"], ["z"], name="r2")])
save("bad_shapes", [helper.make_node("MatMul", ["x", "x"], ["y"], name="mm")])
save("future_opset", [helper.make_node("Relu", ["x"], ["y"], name="r")], opset=99)
dyn = helper.make_tensor_value_info("x", T.FLOAT, ["batch", 3])
save("dynamic", [helper.make_node("Relu", ["x"], ["y"], name="r")], inputs=(dyn,))
# If on a run-time condition whose branches give different shapes.
c = helper.make_tensor_value_info("c", T.BOOL, [])
then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [helper.make_tensor_value_info("t", T.FLOAT, None)])
else_g = helper.make_graph([helper.make_node("Flatten", ["x"], ["e"], axis=0)], "else", [], [helper.make_tensor_value_info("e", T.FLOAT, None)])
save("if_shapes", [helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)], inputs=(x, c))
PY

expect_error "truncated model" "not a valid ONNX model" "$tgc" inspect "$work/truncated.onnx"
expect_error "corrupt model" "not a valid ONNX model" "$tgc" inspect "$work/corrupt.onnx"
expect_error "empty model" "not a valid ONNX model" "$tgc" inspect "$work/empty.onnx"
expect_error "missing file" "cannot open" "$tgc" inspect "$work/nope.onnx"
expect_error "unknown op" "node 'fancy' (FancyOp, opset 13): unsupported op type" "$tgc" inspect "$work/unknown_op.onnx"
expect_error "missing initializer" "node 'add_w' (Add, opset 13): input 'w' is not produced" "$tgc" inspect "$work/missing_input.onnx"
expect_error "cyclic graph" "node 'r1' (Relu, opset 13): input 'z' is not produced" "$tgc" inspect "$work/cycle.onnx"
expect_error "mismatched shapes" "node 'mm' (MatMul, opset 13): matmul: inner dims differ" "$tgc" inspect "$work/bad_shapes.onnx"
expect_error "unsupported opset" "unsupported opset 99" "$tgc" inspect "$work/future_opset.onnx"
expect_error "dynamic dim" "dynamic dim 0 ('batch')" "$tgc" inspect "$work/dynamic.onnx"
expect_error "If branches differ" "node 'branch' (If, opset 13): the condition depends on a model input, and output 0 is f32\[2,3\] in then_branch but f32\[1,6\]" "$tgc" inspect "$work/if_shapes.onnx"
"$tgc" inspect "$work/if_shapes.onnx" --input-value c=0 >/dev/null || { echo "FAIL --input-value c=0 does not fold the If"; fail=1; }
expect_error "unknown --input-value" "--input-value names 'nope', which is not a model input" "$tgc" inspect "$model" --input-value nope=1
expect_error "bad --input-value count" "--input-value image gives 2 values for an input of shape" "$tgc" inspect "$model" --input-value image=1,2
expect_error "unknown command" "unknown command" "$tgc" frobnicate "$model"
expect_error "unknown stage" "unknown --stage" "$tgc" inspect "$model" --stage=nope
expect_error "eval wrong input name" "no input of that name" "$tgc" eval "$model" -i nope="$root/models/digits_samples/image_0.npy"
/usr/bin/python3 -c "import numpy as np; np.save('$work/wrong.npy', np.zeros((2,8), np.float32))"
expect_error "eval wrong shape" "expected f32\[1,1,8,8\], got f32\[2,8\]" "$tgc" eval "$model" -i image="$work/wrong.npy"
expect_error "eval missing input" "missing input 'image'" "$tgc" eval "$model"
expect_error "eval bad npy" "not a .npy file" "$tgc" eval "$model" -i image="$work/corrupt.onnx"
"$tgc" eval "$model" -i image="$work/wrong.npy" -o "$work/outdir" 2>/dev/null
[ -e "$work/outdir/probs.npy" ] && { echo "FAIL eval wrote an output after an error"; fail=1; }
exit $fail
