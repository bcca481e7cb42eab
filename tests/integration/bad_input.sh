#!/usr/bin/env bash
# Bad input must give a one-line error naming what is wrong (the node, where one is at fault) and
# exit status 1, never a crash. The malformed models come from tests/integration/gen_bad_models.py.
# usage: bad_input.sh TGC_BINARY REPO_ROOT
set -uo pipefail
tgc="$1"; root="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
model="$root/models/digits_cnn.onnx"
fail=0

expect_error() {  # description, expected substring (fixed string), command...
  local what="$1" want="$2"; shift 2
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  local lines; lines=$(wc -l <"$work/err")
  if [ $rc -ne 1 ] || [ "$lines" -ne 1 ] || ! grep -qF -- "$want" "$work/err"; then
    echo "FAIL $what: rc=$rc, stderr:"; cat "$work/err"; fail=1
  else
    echo "ok   $what: $(cat "$work/err")"
  fi
}
expect_ok() {  # description, command...
  local what="$1"; shift
  if "$@" >"$work/out" 2>"$work/err"; then echo "ok   $what"; else echo "FAIL $what: rc=$?, stderr:"; cat "$work/err"; fail=1; fi
}
bad() { expect_error "$1" "$2" "$tgc" inspect "$work/$1.onnx"; }  # model name, expected substring

head -c 3000 "$model" >"$work/truncated.onnx"
head -c 4096 /dev/urandom >"$work/corrupt.onnx"
: >"$work/empty.onnx"
/usr/bin/python3 "$root/tests/integration/gen_bad_models.py" "$work" "$model" || { echo "FAIL gen_bad_models.py"; exit 1; }
/usr/bin/python3 - "$work" <<'PY' || { echo "FAIL if_shapes model"; exit 1; }
# If on a run-time condition whose branches give different shapes.
import sys, onnx
from onnx import helper, TensorProto as T
x = helper.make_tensor_value_info("x", T.FLOAT, [2, 3])
y = helper.make_tensor_value_info("y", T.FLOAT, [2, 3])
c = helper.make_tensor_value_info("c", T.BOOL, [])
then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [], [helper.make_tensor_value_info("t", T.FLOAT, None)])
else_g = helper.make_graph([helper.make_node("Flatten", ["x"], ["e"], axis=0)], "else", [], [helper.make_tensor_value_info("e", T.FLOAT, None)])
g = helper.make_graph([helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_g, else_branch=else_g)], "g", [x, c], [y])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{sys.argv[1]}/if_shapes.onnx")
PY

# Files and protobuf.
bad truncated "not a valid ONNX model"
bad corrupt "not a valid ONNX model"
bad empty "not a valid ONNX model"
expect_error "missing file" "cannot open" "$tgc" inspect "$work/nope.onnx"
# Graph structure.
bad unknown_op "node 'fancy' (FancyOp, opset 13): unsupported op type 'FancyOp'"
bad missing_input "node 'add_w' (Add, opset 13): input 'w' is not produced by any node, initializer or graph input"
bad cycle "node 'r1' (Relu, opset 13): input 'z' comes from node 'r2' (Relu), which depends on this node's output: the graph has a cycle"
bad self_loop "node 'acc' (Add, opset 13): input 'z' is this node's own output: the graph has a cycle"
expect_ok "nodes out of topological order are sorted" "$tgc" inspect "$work/unsorted.onnx"
bad cycle_after_unsorted "node 'c1' (Relu, opset 13): input 'b2' comes from node 'c2' (Relu), which depends on this node's output: the graph has a cycle"
bad output_never_produced "graph output 'y' is never produced"
bad too_few_inputs "node 'add_one' (Add, opset 13): missing input 1"
# Opsets and domains.
bad future_opset "unsupported ai.onnx opset 99 (tgc handles 1 to 21)"
bad zero_opset "unsupported ai.onnx opset 0"
bad no_opset "model declares no opset"
bad unknown_domain "node 'foo' (Foo, opset 13): unsupported domain 'com.example'"
expect_ok "a domain imported but never used is fine" "$tgc" inspect "$work/unused_domain.onnx"
# Shapes and data.
bad bad_shapes "node 'mm' (MatMul, opset 13): matmul: inner dims differ: [2,3] @ [2,3]"
bad broadcast_mismatch "node 'add_bcast' (Add, opset 13): shapes [2,3] and [4] do not broadcast"
bad reshape_mismatch "node 'reshape5' (Reshape, opset 13): reshape: cannot reshape [2,3] to [5]"
bad conv_channels "node 'conv3to2' (Conv, opset 13): conv: channels 3 do not match weight [4,2,3,3]"
bad initializer_short "initializer 'w': raw data has 8 bytes, shape needs 24"
bad initializer_huge "initializer 'w': dims [2147483648,2147483648] hold more than 2^40 elements"
bad initializer_negative "initializer 'w': dims [-3] contain a negative size"
bad string_input "input 'x': unsupported ONNX element type STRING (8)"
bad sequence_input "input 'x' is not a tensor"
bad sequence_runtime_split "node 'split_by_input' (SplitToSequence, opset 13): input 1 ('sizes') must be a compile-time constant, but depends on a model input"
bad sequence_runtime_position "node 'at_pos' (SequenceAt, opset 13): input 1 ('pos') must be a compile-time constant, but depends on a model input"
bad sequence_position_range "node 'at_5' (SequenceAt, opset 13): position 5 is out of range for a sequence of 2 tensors"
bad sequence_output "graph output 'y' is a sequence (tgc's model and subgraph outputs are tensors)"
bad sequence_to_tensor_op "node 'relu_seq' (Relu, opset 13): input 0 ('s') is a sequence, but Relu takes a tensor there"
bad tensor_to_sequence_op "node 'len_of_tensor' (SequenceLength, opset 13): input 0 ('x') is a tensor, but SequenceLength takes a sequence there"
# Dynamic dims: every one is listed with the --input-shape flag that fixes it, except a leading
# batch dim that can stay dynamic (tests/integration/dynamic_dims.sh); --input-shape x=? keeps it so.
expect_ok "a leading batch dim stays dynamic" "$tgc" inspect "$work/dynamic.onnx"
expect_ok "--input-shape ? keeps a dim dynamic" "$tgc" inspect "$work/dynamic.onnx" --input-shape x=?,3
expect_error "every dynamic dim listed" \
  "input 'x' dim 0 ('batch'): --input-shape x=<batch>,3; input 'mask' dim 0 ('batch'), dim 1 ('seq'), dim 2 (unnamed): --input-shape mask=<batch>,<seq>,<?>" \
  "$tgc" compile "$work/dynamic_two_inputs.onnx" -o "$work/dyn"
expect_error "only the dims left dynamic listed" "tgc eval also takes them from the -i files): input 'mask' dim 0" \
  "$tgc" inspect "$work/dynamic_two_inputs.onnx" --input-shape x=2,3
expect_ok "--input-shape fixes every dynamic dim" "$tgc" inspect "$work/dynamic_two_inputs.onnx" --input-shape x=2,3 --input-shape mask=2,4,5
expect_error "--input-shape of the wrong rank" "--input-shape x gives 3 dims, the model declares 2" \
  "$tgc" inspect "$work/dynamic.onnx" --input-shape x=1,2,3
/usr/bin/python3 -c "import numpy as np; np.save('$work/x43.npy', np.ones((4,3), np.float32))"
expect_ok "tgc eval takes dynamic dims from the -i files" "$tgc" eval "$work/dynamic.onnx" -i x="$work/x43.npy"
bad no_shape "input 'x' has no shape (unknown rank): --input-shape x=d0,d1,..."

# No crash on damaged copies of a good model: truncations must fail with one line; corrupted
# bytes may still leave a valid model, but never a crash, a hang or more than one line.
bad_sweep=0
for f in "$work"/trunc_*.onnx "$work"/flip_*.onnx; do
  timeout 60 "$tgc" inspect "$f" >/dev/null 2>"$work/err"
  rc=$?; lines=$(wc -l <"$work/err")
  case "$f" in
    */trunc_*) [ $rc -eq 1 ] && [ "$lines" -eq 1 ] ;;
    *) { [ $rc -eq 0 ] && [ "$lines" -eq 0 ]; } || { [ $rc -eq 1 ] && [ "$lines" -eq 1 ]; } ;;
  esac || { echo "FAIL $(basename "$f"): rc=$rc, stderr:"; cat "$work/err"; bad_sweep=1; fail=1; }
done
[ $bad_sweep -eq 0 ] && echo "ok   $(ls "$work"/trunc_*.onnx | wc -l) truncated and $(ls "$work"/flip_*.onnx | wc -l) corrupted copies of digits_cnn.onnx: one-line errors, no crash"

# The CLI and run-time inputs.
# If on a run-time condition, and compile-time input values.
expect_error "If branches differ" "node 'branch' (If, opset 13): the condition depends on a model input, and output 0 is f32[2,3] in then_branch but f32[1,6]" "$tgc" inspect "$work/if_shapes.onnx"
"$tgc" inspect "$work/if_shapes.onnx" --input-value c=0 >/dev/null || { echo "FAIL --input-value c=0 does not fold the If"; fail=1; }
expect_error "Loop with a run-time trip count, no --max-trips" "must be a compile-time constant, but depends on a model input; or give the most iterations with --max-trips N" \
  "$tgc" inspect /usr/share/libonnx-testdata/data/node/test_range_float_type_positive_delta_expanded/model.onnx
expect_error "sizes from data on a GPU target" "the model computes output sizes from data (NonZero, Compress, Unique, TopK with a run-time k, NonMaxSuppression): only the cpu target runs such models for now" \
  "$tgc" compile /usr/share/libonnx-testdata/data/node/test_nonzero_example/model.onnx --target=qcom -o "$work/nz"
real="${TGC_REAL_MODELS:-$root/../shared/models/real}"
expect_error "an If branch built for shorter inputs, on a GPU target" "If 'If_0' runs else_branch only for input:1 up to 351, which only the cpu target checks at run time" \
  "$tgc" compile "$real/silero_vad_v5.onnx" --input-shape input=1,? --input-shape state=2,1,128 --dynamic input:1=512 --target=qcom -o "$work/sv5"
expect_error "unknown --input-value" "--input-value names 'nope', which is not a model input" "$tgc" inspect "$model" --input-value nope=1
expect_error "bad --input-value count" "--input-value image gives 2 values for an input of shape" "$tgc" inspect "$model" --input-value image=1,2
expect_error "unknown command" "unknown command" "$tgc" frobnicate "$model"
expect_error "unknown stage" "unknown --stage" "$tgc" inspect "$model" --stage=nope
expect_error "eval wrong input name" "no input of that name" "$tgc" eval "$model" -i nope="$root/models/digits_samples/image_0.npy"
/usr/bin/python3 -c "import numpy as np; np.save('$work/wrong.npy', np.zeros((2,8), np.float32))"
expect_error "eval wrong shape" "expected f32[1,1,8,8], got f32[2,8]" "$tgc" eval "$model" -i image="$work/wrong.npy"
# inspect's per-kernel views (LLVM IR, assembly, hand-given actions).
expect_error "inspect unknown kernel" "--kernel k999: no kernel of that name" "$tgc" inspect "$model" --stage=loops --kernel=k999
expect_error "inspect --opts without --kernel" "--opts needs --kernel" "$tgc" inspect "$model" --stage=loops --opts="UPCAST(0,2)"
expect_error "inspect asm on qcom" "--stage=asm shows CPU kernels; --target=qcom renders opencl (use --stage=source)" "$tgc" inspect "$model" --stage=asm --target=qcom
expect_error "unknown target" "unknown target 'adreno9' (known: cpu, qcom, vulkan, adreno, cuda)" "$tgc" compile "$model" --target=adreno9 -o "$work/never"
expect_error "target variant" "target 'cpu' takes no variant" "$tgc" compile "$model" --target=cpu:sm_90 -o "$work/never"
expect_error "unknown GPU architecture" "unknown GPU architecture 'sm_999'" "$tgc" compile "$model" --target=cuda:sm_999 -o "$work/never"
# GGUF files (tests/integration/gen_bad_gguf.py): every size, count and offset is checked against the file.
mkdir -p "$work/gguf"
/usr/bin/python3 "$root/tests/integration/gen_bad_gguf.py" "$work/gguf" || { echo "FAIL gen_bad_gguf.py"; exit 1; }
gbad() { expect_error "gguf $1" "$1.gguf: $2" "$tgc" inspect "$work/gguf/$1.gguf" --stage=meta; }
gbad header_only "tensor count at byte 8 needs 8 bytes, the file has 0 left"
gbad version1 "GGUF version 1 is not supported (v2 and v3 are)"
gbad big_endian "a big-endian GGUF file"
gbad version7 "unknown GGUF version 7"
gbad lying_tensor_count "tensor count 1152921504606846976 does not fit in the file"
gbad lying_kv_count "metadata count 1099511627776 does not fit in the file"
gbad lying_string "metadata key 0 (4611686018427387904 bytes) at byte 32 needs 4611686018427387904 bytes"
gbad lying_array "metadata 'a': array of 1125899906842624 u32 values does not fit"
gbad unknown_value_type "metadata 'x' has unknown value type 99"
gbad unknown_array_type "metadata 'x': unknown array element type 42"
gbad deep_arrays "metadata 'x'[0][0][0][0][0][0][0][0]: arrays nested deeper than 8"
gbad duplicate_key "metadata key 'general.architecture' appears twice"
gbad alignment_48 "general.alignment 48 is not a power of two"
gbad alignment_u64 "general.alignment is a u64, not u32"
gbad unknown_tensor_type "tensor 'w' has unknown tensor type 99"
gbad retired_tensor_type "tensor 'w' has unknown tensor type 4"
gbad rank5 "tensor 'w' has rank 5 (1 to 4 allowed)"
gbad huge_dims "tensor 'w' has more elements than fit in 63 bits"
gbad partial_block "tensor 'w' (q4_0) has rows of 33 elements, not a multiple of its block of 32"
gbad unaligned_offset "tensor 'w' data offset 7 is not a multiple of the alignment 32"
gbad data_past_end "tensor 'w' data (256 bytes at data offset 0) runs past the end of the file (32 data bytes)"
gbad offset_past_end "tensor 'w' data (32 bytes at data offset 4611686018427387904) runs past the end of the file"
gbad duplicate_tensor "tensor 'w' appears twice in the tensor table"
# The model built from the metadata and tensors.
gmodel() { expect_error "gguf $1" "$1.gguf: $2" "$tgc" inspect "$work/gguf/$1.gguf" --input-shape tokens=3; }
gmodel gpt2_arch "architecture 'gpt2' is not supported (tgc builds llama, qwen2, qwen3, phi3, gemma2 and gemma3)"
gmodel no_arch "metadata 'general.architecture' is missing"
gmodel missing_tensor "tensor 'output_norm.weight' is missing"
gmodel wrong_tensor_shape "tensor 'blk.0.attn_q.weight' is [9,8], expected [8,8]"
gmodel unsupported_weight_type "tensor 'token_embd.weight' has type q2_K; tgc reads f32, f16, bf16, q8_0"
expect_ok "gguf tiny_llama builds" "$tgc" inspect "$work/gguf/tiny_llama.gguf" --input-shape tokens=3
expect_ok "gguf --stage=meta" "$tgc" inspect "$work/gguf/tiny_llama.gguf" --stage=meta
grep -q "^blk.0.attn_q.weight f32 \[8, 8\]" "$work/out" || { echo "FAIL --stage=meta lists no blk.0.attn_q.weight f32 [8, 8]"; fail=1; }
expect_ok "gguf without a token count (a run-time count by default)" "$tgc" inspect "$work/gguf/tiny_llama.gguf"
expect_error "gguf eval without a token count" "the token count needs a size (--input-shape tokens=N, or --dynamic n_tokens=MAX" \
  "$tgc" eval "$work/gguf/tiny_llama.gguf"
expect_error "gguf --ctx 1" "--ctx 1: the KV cache needs at least 2 rows" "$tgc" inspect "$work/gguf/tiny_llama.gguf" --ctx 1
expect_error "gguf more tokens than cache rows" "20 tokens per run do not fit a KV cache of 8 rows (--ctx)" \
  "$tgc" inspect "$work/gguf/tiny_llama.gguf" --input-shape tokens=20 --ctx 8
expect_error "gguf --dynamic n_kv" "--dynamic names 'n_kv'; a GGUF model's run-time dim is 'n_tokens'" \
  "$tgc" inspect "$work/gguf/tiny_llama.gguf" --dynamic n_kv=8
expect_error "gguf --input-shape of another input" "--input-shape names 'x'; a GGUF model's one input is 'tokens'" \
  "$tgc" inspect "$work/gguf/tiny_llama.gguf" --input-shape x=3
expect_error "--stage=meta of an ONNX file" "this is not a GGUF file" "$tgc" inspect "$model" --stage=meta
# No crash on damaged copies: truncations fail in one line; flipped bytes fail in one line or
# still build (a flipped weight byte is a valid file).
gsweep=0
for f in "$work"/gguf/gtrunc_*.gguf "$work"/gguf/gflip_*.gguf; do
  timeout 60 "$tgc" inspect "$f" --input-shape tokens=3 >/dev/null 2>"$work/err"
  rc=$?; lines=$(wc -l <"$work/err")
  case "$f" in
    */gtrunc_*) [ $rc -eq 1 ] && [ "$lines" -eq 1 ] ;;
    *) { [ $rc -eq 0 ] && [ "$lines" -eq 0 ]; } || { [ $rc -eq 1 ] && [ "$lines" -eq 1 ]; } ;;
  esac || { echo "FAIL $(basename "$f"): rc=$rc, stderr:"; cat "$work/err"; gsweep=1; fail=1; }
done
[ $gsweep -eq 0 ] && echo "ok   $(ls "$work"/gguf/gtrunc_*.gguf | wc -l) truncated and $(ls "$work"/gguf/gflip_*.gguf | wc -l) corrupted copies of a small llama GGUF: one-line errors, no crash"
for cmd in "--help" "compile --help" "inspect -h" "eval --help"; do
  expect_ok "tgc $cmd prints the usage" "$tgc" $cmd
  grep -q "^usage:" "$work/out" || { echo "FAIL tgc $cmd printed no usage"; fail=1; }
done
expect_ok "inspect --stage=source on qcom" "$tgc" inspect "$model" --stage=source --target=qcom --kernel=k0
expect_error "inspect illegal action" "UPCAST" "$tgc" inspect "$model" --stage=loops --kernel=k0 --opts="UPCAST(0,7)"
expect_ok "inspect --stage=asm --kernel" "$tgc" inspect "$model" --stage=asm --kernel=k0
grep -q "tgc_kernel_k0" "$work/out" || { echo "FAIL inspect --stage=asm printed no kernel k0"; fail=1; }
expect_ok "inspect --stage=llvm --opts" "$tgc" inspect "$model" --stage=llvm --kernel=k0 --opts="UPCAST(0,2)"
grep -q "^; opts: UPCAST(0,2)" "$work/out" || { echo "FAIL inspect --opts did not apply UPCAST(0,2)"; fail=1; }
expect_error "eval missing input" "missing input 'image'" "$tgc" eval "$model"
expect_error "eval bad npy" "not a .npy file" "$tgc" eval "$model" -i image="$work/corrupt.onnx"
"$tgc" eval "$model" -i image="$work/wrong.npy" -o "$work/outdir" 2>/dev/null
[ -e "$work/outdir/probs.npy" ] && { echo "FAIL eval wrote an output after an error"; fail=1; }
exit $fail
