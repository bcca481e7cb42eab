#!/usr/bin/env bash
# Every real model in ../shared/models/real compiled for cpu (or TARGET), its artifact run on seeded inputs,
# and each output compared with onnxruntime-node on the same inputs: max|tgc - ort| must be at
# most 1e-4 of max|ort| (fp32). Shapes are the README's reference shapes. Silero v5 is compiled
# once with sr fixed at compile time (--input-value) and once with sr as a run-time input, where
# both If branches are computed and selected; silero legacy takes sr at run time.
# usage: real_models_vs_ort.sh TGC_BINARY REPO_ROOT [TARGET]   (TGC_REAL_MODELS overrides the model dir)
set -euo pipefail
tgc="$1"; root="$2"; target="${3:-cpu}"
real="${TGC_REAL_MODELS:-$root/../shared/models/real}"
ort="$root/tools/ort/ort_run.js"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
[ -d "$real" ] || { echo "FAIL real models not found in $real (set TGC_REAL_MODELS)"; exit 1; }
[ "$target" != vulkan ] || "$root/tests/vulkan_device.sh" "$tgc" "$root" || exit $?
[ -d "$root/tools/ort/node_modules/onnxruntime-node" ] || { echo "FAIL onnxruntime-node is not installed (run tools/scripts/install-deps.sh)"; exit 1; }
fail=0
covered="ch_PP-OCRv4_det_infer.onnx ch_PP-OCRv4_rec_infer.onnx ch_ppocr_mobile_v2.0_cls_infer.onnx melspectrogram.onnx
embedding_model.onnx hello_deepa.onnx silero_vad_v5.onnx silero_vad_legacy.onnx"
for f in "$real"/*.onnx; do
  echo "$covered" | grep -qw -- "$(basename "$f")" || { echo "FAIL $(basename "$f") has no case in this test"; fail=1; }
done

/usr/bin/python3 - "$work" <<'PY'
import sys, numpy as np
d = sys.argv[1]
r = np.random.default_rng(0)
f32 = lambda a: np.asarray(a, np.float32)
# A white page with rows of dark strokes, normalised as PaddleOCR does: the detector sees text
# (random noise would give an all-zero probability map that tests nothing).
img = np.ones((320, 320), np.float32)
for line in range(6):
    y, x = 20 + 48 * line, 16
    while x < 296:
        w, h = r.integers(2, 5), r.integers(14, 22)
        img[y:y + h, x:x + w] = 0.1
        if r.random() < 0.5:
            img[y + 4:y + 7, x:x + r.integers(6, 12)] = 0.1
        x += w + r.integers(3, 9) + (20 if r.random() < 0.08 else 0)
mean, std = f32([0.485, 0.456, 0.406])[:, None, None], f32([0.229, 0.224, 0.225])[:, None, None]
np.save(f"{d}/det_x.npy", f32(((img[None] - mean) / std)[None] + r.standard_normal((1, 3, 320, 320)) * 0.05))
np.save(f"{d}/rec_x.npy", f32(r.standard_normal((1, 3, 48, 320))))
np.save(f"{d}/cls_x.npy", f32(r.standard_normal((1, 3, 48, 192))))
np.save(f"{d}/mel_input.npy", f32(r.standard_normal((1, 1280)) * 1000))
np.save(f"{d}/emb_input_1.npy", f32(r.standard_normal((1, 76, 32, 1))))
np.save(f"{d}/hello_x.npy", f32(r.standard_normal((1, 25, 96))))
np.save(f"{d}/audio512.npy", f32(r.standard_normal((1, 512)) * 0.3))
np.save(f"{d}/audio256.npy", f32(r.standard_normal((1, 256)) * 0.3))
np.save(f"{d}/state.npy", f32(r.standard_normal((2, 1, 128)) * 0.5))
np.save(f"{d}/h.npy", f32(r.standard_normal((2, 1, 64)) * 0.5))
np.save(f"{d}/c.npy", f32(r.standard_normal((2, 1, 64)) * 0.5))
np.save(f"{d}/sr16000.npy", np.array(16000, np.int64))
np.save(f"{d}/sr8000.npy", np.array(8000, np.int64))
PY

# check NAME MODEL "TGC_COMPILE_ARGS" "ARTIFACT_INPUTS" "ORT_ONLY_INPUTS"
# Inputs are NAME=FILE pairs (files in $work); ORT_ONLY_INPUTS are those fixed at compile time.
check() {
  local name="$1" model="$real/$2" cargs="$3" ins="$4" ort_only="$5"
  echo "== $name"
  local a=() o=()
  for kv in $ins; do a+=(-i "${kv%%=*}=$work/${kv#*=}"); done
  o=("${a[@]}")
  for kv in $ort_only; do o+=(-i "${kv%%=*}=$work/${kv#*=}"); done
  # shellcheck disable=SC2086
  if ! "$tgc" compile --target="$target" "$model" $cargs -o "$work/$name"; then fail=1; return; fi
  "$work/$name" "${a[@]}" -o "$work/$name.tgc" || { echo "FAIL $name: artifact failed"; fail=1; return; }
  node "$ort" "$model" "${o[@]}" -o "$work/$name.ort"
  /usr/bin/python3 "$root/tests/compare_npy.py" "$work/$name.tgc" "$work/$name.ort" --max-rel 1e-4 || fail=1
}

check det ch_PP-OCRv4_det_infer.onnx "--input-shape x=1,3,320,320" "x=det_x.npy" ""
check rec ch_PP-OCRv4_rec_infer.onnx "--input-shape x=1,3,48,320" "x=rec_x.npy" ""
check cls ch_ppocr_mobile_v2.0_cls_infer.onnx "--input-shape x=1,3,48,192" "x=cls_x.npy" ""
check melspectrogram melspectrogram.onnx "--input-shape input=1,1280" "input=mel_input.npy" ""
check embedding embedding_model.onnx "--input-shape input_1=1,76,32,1" "input_1=emb_input_1.npy" ""
check hello_deepa hello_deepa.onnx "" "onnx::Flatten_0=hello_x.npy" ""
check silero_v5_sr_fixed silero_vad_v5.onnx "--input-shape input=1,512 --input-shape state=2,1,128 --input-value sr=16000" \
  "input=audio512.npy state=state.npy" "sr=sr16000.npy"
# 256 samples are valid for both branches, so sr can stay a run-time input.
"$tgc" compile --target="$target" "$real/silero_vad_v5.onnx" --input-shape input=1,256 --input-shape state=2,1,128 -o "$work/v5_runtime_sr" || fail=1
for sr in 16000 8000; do
  echo "== silero_v5_runtime_sr $sr"
  "$work/v5_runtime_sr" -i input="$work/audio256.npy" -i state="$work/state.npy" -i sr="$work/sr$sr.npy" -o "$work/v5_$sr.tgc" || fail=1
  node "$ort" "$real/silero_vad_v5.onnx" -i input="$work/audio256.npy" -i state="$work/state.npy" -i sr="$work/sr$sr.npy" -o "$work/v5_$sr.ort"
  /usr/bin/python3 "$root/tests/compare_npy.py" "$work/v5_$sr.tgc" "$work/v5_$sr.ort" --max-rel 1e-4 || fail=1
done
"$tgc" compile --target="$target" "$real/silero_vad_legacy.onnx" --input-shape input=1,512 --input-shape h=2,1,64 --input-shape c=2,1,64 -o "$work/legacy" || fail=1
for sr in 16000 8000; do
  echo "== silero_legacy $sr"
  ins=(-i input="$work/audio512.npy" -i sr="$work/sr$sr.npy" -i h="$work/h.npy" -i c="$work/c.npy")
  "$work/legacy" "${ins[@]}" -o "$work/legacy_$sr.tgc" || fail=1
  node "$ort" "$real/silero_vad_legacy.onnx" "${ins[@]}" -o "$work/legacy_$sr.ort"
  /usr/bin/python3 "$root/tests/compare_npy.py" "$work/legacy_$sr.tgc" "$work/legacy_$sr.ort" --max-rel 1e-4 || fail=1
done
exit $fail
