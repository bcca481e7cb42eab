#!/usr/bin/env bash
# The vulkan target on this machine's Vulkan device (lavapipe in CI) with the validation layer on,
# so any validation message fails a run: the bundled digits model as an executable (every
# sample, --bench), as shared libraries (two models in one program), every emitted kernel
# through spirv-val, a launch of more work-groups than one dispatch dimension takes; memory used
# directly and through staging copies (TGC_VK_STAGING=1, the discrete-GPU path); barriers only
# between dependent dispatches; the pipeline cache (saved, loaded, and every kind of bad file
# ignored); TGC_PROFILE's per-dispatch timestamps; launches sharing a pipeline; one-line errors
# (no driver, no such device), and the adreno target's artifact (aarch64, SPIR-V inside; run
# under qemu on arm64 lavapipe from the private root, tests/integration/arm64_vulkan.sh: digits
# and the OCR classifier). Subgroup
# reduces, their fallback and the missing-feature error: tgc_compiled_tests (VulkanSubgroup*,
# CompiledOpsErrors.VulkanDeviceWithoutAFeature).
# Batches and run-time dims: tests/integration/dynamic_dims.sh; real models: tests/integration/real_models_vs_ort.sh ...
# vulkan; --beam: tests/integration/beam_cache.sh (vulkan).
# Skips (77) without a Vulkan device.
# usage: vulkan_artifacts.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"
"$root/tests/integration/vulkan_device.sh" "$tgc" "$root" || exit $?
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
export TGC_VK_VALIDATION=1
fail=0
. "$root/tests/integration/digits_lib.sh"
. "$root/tests/integration/arm64_vulkan.sh"

echo "== vulkan executable"
"$tgc" compile "$model" --target=vulkan -o "$work/digits"
for k in 0 1 2 3; do "$work/digits" -i image="$samples/image_$k.npy" -o "$work/vk$k"; expect_probs "$work/vk$k" $k; done
"$work/digits" --bench 20 | tail -1 | grep -q '"median_ms"' || { echo "FAIL --bench has no median_ms"; fail=1; }

echo "== vulkan shared libraries: two models in one program"
"$tgc" compile "$model" --target=vulkan --shared -o "$work/libdigitsa.so"
"$tgc" compile "$model" --target=vulkan --shared -o "$work/libdigitsb.so"
cc -O2 -I"$work" "$root/tests/integration/c_api/two_models.c" -L"$work" -ldigitsa -ldigitsb -lm -Wl,-rpath,"$work" -o "$work/two_models"
"$work/two_models" "$samples/image_2.npy" "$samples/expected_probs_2.npy" || fail=1

echo "== --precision=fp16: f16 arithmetic, and its float fallback on a device without shaderFloat16"
"$tgc" compile "$model" --target=vulkan --precision=fp16 -o "$work/digits16"
"$work/digits16" -i image="$samples/image_1.npy" -o "$work/h16"
TGC_VK_HIDE=float16 "$work/digits16" -i image="$samples/image_1.npy" -o "$work/h16f"
mkdir -p "$work/want16"; cp "$samples/expected_probs_1.npy" "$work/want16/probs.npy"
for o in h16 h16f; do $cmp "$work/$o" "$work/want16" --max-rel 1e-2 || { echo "FAIL fp16 digits ($o) off"; fail=1; }; done
# The fallback computes unrounded (f32 registers): other bits than the f16 run.
if cmp -s "$work/h16/probs.npy" "$work/h16f/probs.npy"; then echo "FAIL TGC_VK_HIDE=float16 ran the same kernels"; fail=1; fi

echo "== spirv-val on every kernel"
"$tgc" inspect "$model" --target=vulkan --stage=blob -o "$work/spv" > /dev/null
n=0
for f in "$work"/spv/*.bin; do
  spirv-val --target-env vulkan1.1 "$f" || { echo "FAIL spirv-val $(basename "$f")"; fail=1; }
  n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "FAIL no kernels written by --stage=blob"; fail=1; }
echo "$n kernels valid"

echo "== more work-groups than one dispatch dimension takes (65535): spread over x and y"
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto as T
d, n = sys.argv[1], 70000 * 64 + 3
x = helper.make_tensor_value_info("x", T.FLOAT, [n])
y = helper.make_tensor_value_info("y", T.FLOAT, [n])
onnx.save(helper.make_model(helper.make_graph([helper.make_node("Sqrt", ["x"], ["y"])], "big", [x], [y]),
                            opset_imports=[helper.make_opsetid("", 13)]), f"{d}/big.onnx")
v = np.random.default_rng(0).random(n, dtype=np.float32)
np.save(f"{d}/big_x.npy", v)
import os; os.makedirs(f"{d}/big_want", exist_ok=True); np.save(f"{d}/big_want/y.npy", np.sqrt(v))
PY
"$tgc" compile "$work/big.onnx" --target=vulkan -o "$work/big" 2>/dev/null
"$work/big" -i x="$work/big_x.npy" -o "$work/big_got"
$cmp "$work/big_got" "$work/big_want" --rtol 1e-6 --atol 1e-7 || fail=1

echo "== memory: used directly (lavapipe is a unified-memory device), and through staging copies"
TGC_VERBOSE=1 "$work/digits" -i image="$samples/image_1.npy" -o "$work/direct1" 2>"$work/err" >/dev/null || fail=1
grep -q "inputs and outputs through the mapping" "$work/err" || { echo "FAIL lavapipe did not use its memory directly"; cat "$work/err"; fail=1; }
expect_probs "$work/direct1" 1
for k in 0 2; do  # TGC_VK_STAGING=1: the discrete-GPU path (device-local buffers, copies in the command buffer)
  TGC_VK_STAGING=1 TGC_VERBOSE=1 "$work/digits" -i image="$samples/image_$k.npy" -o "$work/staged$k" 2>"$work/err" >/dev/null || fail=1
  grep -q "inputs and outputs through staging copies" "$work/err" || { echo "FAIL TGC_VK_STAGING=1 did not stage"; cat "$work/err"; fail=1; }
  expect_probs "$work/staged$k" $k
done
TGC_VK_STAGING=1 "$work/two_models" "$samples/image_2.npy" "$samples/expected_probs_2.npy" || fail=1

echo "== barriers only between dependent dispatches"
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto as T
d = sys.argv[1]
v = lambda n: helper.make_tensor_value_info(n, T.FLOAT, [1000])
# Two independent kernels (no barrier between them), then one reading both (one barrier).
nodes = [helper.make_node("Sqrt", ["x"], ["a"]), helper.make_node("Exp", ["x"], ["b"]),
         helper.make_node("ReduceSum", ["a"], ["sa"], keepdims=1), helper.make_node("Mul", ["b", "sa"], ["c"])]
onnx.save(helper.make_model(helper.make_graph(nodes, "fork", [v("x")], [v("a"), v("b"), v("c")]),
                            opset_imports=[helper.make_opsetid("", 13)]), f"{d}/fork.onnx")
x = np.random.default_rng(1).random(1000, dtype=np.float32)
np.save(f"{d}/fork_x.npy", x)
import os; os.makedirs(f"{d}/fork_want", exist_ok=True)
a, b = np.sqrt(x), np.exp(x)
np.save(f"{d}/fork_want/a.npy", a); np.save(f"{d}/fork_want/b.npy", b); np.save(f"{d}/fork_want/c.npy", b * a.sum())
PY
"$tgc" compile "$work/fork.onnx" --target=vulkan -o "$work/fork" 2>/dev/null
for staging in 0 1; do
  TGC_VK_STAGING=$staging TGC_VERBOSE=1 "$work/fork" -i x="$work/fork_x.npy" -o "$work/fork_got" 2>"$work/err" >/dev/null || fail=1
  $cmp "$work/fork_got" "$work/fork_want" --rtol 1e-5 --atol 1e-6 || fail=1
  line="$(grep "recorded .* dispatches" "$work/err" || true)"
  d="$(echo "$line" | sed -n 's/.*recorded \([0-9]*\) dispatches with \([0-9]*\) barriers.*/\1 \2/p')"
  set -- $d
  if [ -z "$d" ] || [ "$2" -ge $(($1 - 1)) ]; then echo "FAIL fork: want fewer barriers than dispatches - 1: $line"; fail=1; else echo "ok   fork: $line"; fi
done
TGC_VERBOSE=1 "$work/digits" 2>"$work/err" >/dev/null || fail=1
grep "recorded .* dispatches" "$work/err" | sed 's/^/     digits: /'

echo "== launches with the same SPIR-V share one pipeline"
/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np, onnx, os
from onnx import helper, TensorProto as T
d = sys.argv[1]
v = lambda n: helper.make_tensor_value_info(n, T.FLOAT, [1000])
nodes = [helper.make_node("Sqrt", ["x"], ["a"]), helper.make_node("Sqrt", ["y"], ["b"])]
onnx.save(helper.make_model(helper.make_graph(nodes, "twin", [v("x"), v("y")], [v("a"), v("b")]),
                            opset_imports=[helper.make_opsetid("", 13)]), f"{d}/twin.onnx")
r = np.random.default_rng(3)
x, y = r.random(1000, dtype=np.float32), r.random(1000, dtype=np.float32)
np.save(f"{d}/twin_x.npy", x); np.save(f"{d}/twin_y.npy", y)
os.makedirs(f"{d}/twin_want", exist_ok=True)
np.save(f"{d}/twin_want/a.npy", np.sqrt(x)); np.save(f"{d}/twin_want/b.npy", np.sqrt(y))
PY
"$tgc" compile "$work/twin.onnx" --target=vulkan -o "$work/twin" 2>/dev/null
TGC_VERBOSE=1 "$work/twin" -i x="$work/twin_x.npy" -i y="$work/twin_y.npy" -o "$work/twin_got" 2>"$work/err" >/dev/null || fail=1
$cmp "$work/twin_got" "$work/twin_want" --rtol 1e-6 --atol 1e-7 || fail=1
grep -q "1 pipelines made, 1 launches reuse one" "$work/err" || { echo "FAIL twin: want one pipeline for both launches"; cat "$work/err"; fail=1; }
grep -q "recorded 2 dispatches with 0 barriers" "$work/err" || { echo "FAIL twin: want no barrier between independent dispatches"; cat "$work/err"; fail=1; }

echo "== pipeline cache (TGC_VK_CACHE; default \$XDG_CACHE_HOME/tgc)"
cache_run() {  # expected verbose text, then the label; runs digits on sample 3 and checks it
  TGC_VK_CACHE="$work/vkcache" TGC_VERBOSE=1 "$work/digits" -i image="$samples/image_3.npy" -o "$work/cached" 2>"$work/err" >/dev/null || { echo "FAIL digits with the pipeline cache $2"; cat "$work/err"; fail=1; }
  grep -q "$1" "$work/err" || { echo "FAIL pipeline cache $2: no '$1' in"; cat "$work/err"; fail=1; }
  expect_probs "$work/cached" 3
}
cache_run "not used (no cache file yet)" "first run"
grep -q "pipeline cache .*: saved [0-9]* bytes" "$work/err" || { echo "FAIL the pipeline cache was not saved"; fail=1; }
cache_run "loaded [0-9]* bytes" "second run"
pc="$(ls "$work"/vkcache/*.pipelines)"
[ "$(echo "$pc" | wc -l)" -eq 1 ] || { echo "FAIL want one cache file: $pc"; fail=1; }
cache_edit() {  # a python expression turning bytes `b` into the file's new contents
  /usr/bin/python3 - "$pc" "$1" <<'PY'
import sys
p, expr = sys.argv[1], sys.argv[2]
b = open(p, "rb").read()
def fnv(data):
    h = 0xcbf29ce484222325
    for c in data: h = ((h ^ c) * 0x100000001b3) & 0xffffffffffffffff
    return h
def wrap(payload): return b[:8] + len(payload).to_bytes(8, "little") + fnv(payload).to_bytes(8, "little") + payload
open(p, "wb").write(eval(expr))
PY
}
cache_edit 'b[:40] + bytes([b[40] ^ 0xff]) + b[41:]'; cache_run "not used (checksum mismatch)" "one byte flipped"
cache_run "loaded" "rewritten after the flipped byte"
cache_edit 'b[:30]'; cache_run "not used (truncated" "truncated"
cache_edit 'bytes(range(256)) * 4'; cache_run "not used (not a tgc pipeline cache)" "garbage"
cache_run "loaded" "rewritten after garbage"
cache_edit 'wrap(b[24:40] + bytes([b[40] ^ 0xff]) + b[41:])'; cache_run "not used (another device or driver)" "another pipelineCacheUUID"
cache_edit 'wrap(b[24:28] + bytes([7, 0, 0, 0]) + b[32:])'; cache_run "not used (unknown driver header)" "unknown header version"
cache_edit 'wrap(b[24:] + bytes(64))'; cache_run "pipeline cache" "driver data with trailing bytes (the driver decides)"
TGC_VK_CACHE=/proc/no-such-dir TGC_VERBOSE=1 "$work/digits" 2>"$work/err" >/dev/null || { echo "FAIL an unwritable cache directory failed the run"; fail=1; }
grep -q "not saved" "$work/err" || { echo "FAIL no 'not saved' note for an unwritable cache directory"; cat "$work/err"; fail=1; }

echo "== TGC_PROFILE: per-dispatch GPU time from timestamps"
TGC_PROFILE=all "$work/digits" --bench 5 2>"$work/err" >"$work/bench.json" || fail=1
head -1 "$work/err"
runs=$(( $(grep -o '"warmup": [0-9]*' "$work/bench.json" | grep -o '[0-9]*$') + 5 ))  # the warm-up runs and the 5
grep -q "^tgc profile: $runs runs, [0-9.]* ms per run of GPU time" "$work/err" || { echo "FAIL no profile header for $runs runs"; cat "$work/err"; fail=1; }
listed=$(grep -c "^ *[0-9.]* ms *[0-9.]*%  " "$work/err" || true)
[ "$listed" -eq "$n" ] || { echo "FAIL the profile lists $listed kernels, the model has $n"; fail=1; }
TGC_PROFILE=1 TGC_VK_STAGING=1 "$work/digits" -i image="$samples/image_0.npy" -o "$work/prof0" 2>"$work/err" >/dev/null || fail=1
grep -q "^tgc profile: 1 runs" "$work/err" || { echo "FAIL no profile with staging"; cat "$work/err"; fail=1; }
expect_probs "$work/prof0" 0

echo "== errors: one line, exit 1"
expect_error() {  # description, expected substring, command...
  local what="$1" want="$2"; shift 2
  if "$@" >"$work/out" 2>"$work/err"; then echo "FAIL $what: succeeded"; fail=1; return; fi
  if [ "$(wc -l <"$work/err")" -ne 1 ] || ! grep -qF -- "$want" "$work/err"; then
    echo "FAIL $what:"; cat "$work/err"; fail=1
  else
    echo "ok   $what: $(cat "$work/err")"
  fi
}
expect_error "no Vulkan driver" "no Vulkan device found" env TGC_VK_VALIDATION=0 VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json "$work/digits"
# The messenger is live from vkCreateInstance on: the loader's complaint reaches it.
TGC_VERBOSE=1 TGC_VK_VALIDATION=1 VK_DRIVER_FILES=/nonexistent.json VK_ICD_FILENAMES=/nonexistent.json "$work/digits" 2>"$work/err" >/dev/null || true
grep -q "^tgc: vulkan loader: " "$work/err" || { echo "FAIL no loader message reached the messenger"; cat "$work/err"; fail=1; }
expect_error "TGC_VK_DEVICE matches nothing" "TGC_VK_DEVICE=no-such-gpu matches no Vulkan 1.1 compute device" \
  env TGC_VK_DEVICE=no-such-gpu "$work/digits"

/usr/bin/python3 - "$work" <<'PY'
import sys, onnx
from onnx import helper, TensorProto as T
v = lambda n: helper.make_tensor_value_info(n, T.FLOAT, [40 << 20])  # 160 MiB: past lavapipe's 128 MiB
onnx.save(helper.make_model(helper.make_graph([helper.make_node("Sqrt", ["x"], ["y"])], "huge", [v("x")], [v("y")]),
                            opset_imports=[helper.make_opsetid("", 13)]), f"{sys.argv[1]}/huge.onnx")
PY
"$tgc" compile "$work/huge.onnx" --target=vulkan -o "$work/huge" 2>/dev/null
TGC_VERBOSE=1 "$work/digits" 2>"$work/err" >/dev/null || fail=1
if grep -q "device 'llvmpipe" "$work/err"; then  # lavapipe: 128 MiB
  expect_error "a buffer past maxStorageBufferRange" "lets a kernel address at most 134217728 (maxStorageBufferRange)" "$work/huge"
else
  echo "note: not lavapipe; the maxStorageBufferRange error is checked there"
fi

echo "== adreno: aarch64 executable with SPIR-V kernels"
"$tgc" compile "$model" --target=adreno -o "$work/digits_adreno"
file "$work/digits_adreno" | grep -q aarch64 || { echo "FAIL adreno artifact is not aarch64"; fail=1; }
if [ -n "$ARM64_VK_ROOT" ]; then
  echo "== adreno artifacts under qemu-aarch64 on arm64 lavapipe"
  run_arm64_vulkan "$work/digits_adreno" -i image="$samples/image_3.npy" -o "$work/a64_3"
  expect_probs "$work/a64_3" 3
  cls="$root/../shared/models/real/ch_ppocr_mobile_v2.0_cls_infer.onnx"
  if [ -e "$cls" ]; then  # a real model: the aarch64 artifact against the x86 one (checked against onnxruntime elsewhere)
    /usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(0).standard_normal((1, 3, 48, 192)).astype(np.float32))" "$work/cls_x.npy"
    for t in vulkan adreno; do "$tgc" compile "$cls" --input-shape x=1,3,48,192 --target=$t -o "$work/cls_$t" 2>/dev/null; done
    "$work/cls_vulkan" -i x="$work/cls_x.npy" -o "$work/cls_x86"
    run_arm64_vulkan "$work/cls_adreno" -i x="$work/cls_x.npy" -o "$work/cls_a64"
    $cmp "$work/cls_a64" "$work/cls_x86" --max-rel 1e-4 || fail=1
  fi
else
  echo "note: no arm64 Vulkan root (tools/scripts/arm64-vulkan-root.sh .arm64-vk): adreno not run"
fi
exit $fail
