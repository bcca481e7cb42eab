#!/usr/bin/env bash
# The vulkan target on this machine's Vulkan device (lavapipe in CI) with the validation layer on,
# so any validation message fails a run: the bundled digits model as an executable (every
# sample, --bench), as shared libraries (two models in one program), every emitted kernel
# through spirv-val, a launch of more work-groups than one dispatch dimension takes, one-line
# errors (no driver, no such device, --beam), and the adreno target's artifact (aarch64,
# SPIR-V inside; run under qemu where arm64 lavapipe is installed: digits and the OCR classifier). Batches and run-time dims: tests/dynamic_dims.sh; real models:
# tests/real_models_vs_ort.sh ... vulkan.
# Skips (77) without a Vulkan device.
# usage: vulkan_artifacts.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"
"$root/tests/vulkan_device.sh" "$tgc" "$root" || exit $?
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
export TGC_VK_VALIDATION=1
fail=0
. "$root/tests/digits_lib.sh"

echo "== vulkan executable"
"$tgc" compile "$model" --target=vulkan -o "$work/digits"
for k in 0 1 2 3; do "$work/digits" -i image="$samples/image_$k.npy" -o "$work/vk$k"; expect_probs "$work/vk$k" $k; done
"$work/digits" --bench 20 | tail -1 | grep -q '"median_ms"' || { echo "FAIL --bench has no median_ms"; fail=1; }

echo "== vulkan shared libraries: two models in one program"
"$tgc" compile "$model" --target=vulkan --shared -o "$work/libdigitsa.so"
"$tgc" compile "$model" --target=vulkan --shared -o "$work/libdigitsb.so"
cc -O2 -I"$work" "$root/tests/c_api/two_models.c" -L"$work" -ldigitsa -ldigitsb -lm -Wl,-rpath,"$work" -o "$work/two_models"
"$work/two_models" "$samples/image_2.npy" "$samples/expected_probs_2.npy" || fail=1

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
expect_error "--beam" "--beam is not supported for --target=vulkan yet" "$tgc" compile "$model" --target=vulkan --beam=2 -o "$work/beam"

echo "== adreno: aarch64 executable with SPIR-V kernels"
"$tgc" compile "$model" --target=adreno -o "$work/digits_adreno"
file "$work/digits_adreno" | grep -q aarch64 || { echo "FAIL adreno artifact is not aarch64"; fail=1; }
# Under qemu on arm64 lavapipe (dpkg --add-architecture arm64; libvulkan1:arm64
# mesa-vulkan-drivers:arm64), without the validation layer, which has no arm64 build here. Not
# installed by default: its libc6:arm64 hangs the `qemu-aarch64 -L` tests (install-deps.sh).
if command -v qemu-aarch64 >/dev/null && [ -e /usr/lib/aarch64-linux-gnu/libvulkan.so.1 ] &&
   ls /usr/share/vulkan/icd.d/lvp_icd.aarch64.json >/dev/null 2>&1; then
  echo "== adreno artifacts under qemu-aarch64 on arm64 lavapipe"
  TGC_VK_VALIDATION=0 qemu-aarch64 "$work/digits_adreno" -i image="$samples/image_3.npy" -o "$work/a64_3"
  expect_probs "$work/a64_3" 3
  cls="$root/../shared/models/real/ch_ppocr_mobile_v2.0_cls_infer.onnx"
  if [ -e "$cls" ]; then  # a real model: the aarch64 artifact against the x86 one (checked against onnxruntime elsewhere)
    /usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(0).standard_normal((1, 3, 48, 192)).astype(np.float32))" "$work/cls_x.npy"
    for t in vulkan adreno; do "$tgc" compile "$cls" --input-shape x=1,3,48,192 --target=$t -o "$work/cls_$t" 2>/dev/null; done
    "$work/cls_vulkan" -i x="$work/cls_x.npy" -o "$work/cls_x86"
    TGC_VK_VALIDATION=0 qemu-aarch64 "$work/cls_adreno" -i x="$work/cls_x.npy" -o "$work/cls_a64"
    $cmp "$work/cls_a64" "$work/cls_x86" --max-rel 1e-4 || fail=1
  fi
else
  echo "note: no arm64 Vulkan loader and lavapipe (libvulkan1:arm64, mesa-vulkan-drivers:arm64): adreno not run"
fi
exit $fail
