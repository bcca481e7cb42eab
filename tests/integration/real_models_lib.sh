# Sourced by the real-model checks (tests/integration/real_models_vs_ort.sh here, tools/scripts/gpu-check.sh on
# a GPU machine): seeded inputs at the README's reference shapes, and one line per case.
# Needs $real (the models) set by the caller.

real_model_inputs() {  # dir: writes the input .npy files
/usr/bin/python3 - "$1" <<'PY'
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
}

# NAME|MODEL|TGC_COMPILE_ARGS|ARTIFACT_INPUTS|ORT_ONLY_INPUTS. Inputs are NAME=FILE pairs (files
# from real_model_inputs); ORT_ONLY_INPUTS are those fixed at compile time. Silero v5 is compiled
# once with sr fixed (--input-value) and once with sr a run-time input, where both If branches are
# computed and selected (256 samples are valid for both); silero legacy takes sr at run time.
real_model_cases() {
  cat <<'CASES'
det|ch_PP-OCRv4_det_infer.onnx|--input-shape x=1,3,320,320|x=det_x.npy|
rec|ch_PP-OCRv4_rec_infer.onnx|--input-shape x=1,3,48,320|x=rec_x.npy|
cls|ch_ppocr_mobile_v2.0_cls_infer.onnx|--input-shape x=1,3,48,192|x=cls_x.npy|
melspectrogram|melspectrogram.onnx|--input-shape input=1,1280|input=mel_input.npy|
embedding|embedding_model.onnx|--input-shape input_1=1,76,32,1|input_1=emb_input_1.npy|
hello_deepa|hello_deepa.onnx||onnx::Flatten_0=hello_x.npy|
silero_v5_sr_fixed|silero_vad_v5.onnx|--input-shape input=1,512 --input-shape state=2,1,128 --input-value sr=16000|input=audio512.npy state=state.npy|sr=sr16000.npy
silero_v5_runtime_sr_16000|silero_vad_v5.onnx|--input-shape input=1,256 --input-shape state=2,1,128|input=audio256.npy state=state.npy sr=sr16000.npy|
silero_v5_runtime_sr_8000|silero_vad_v5.onnx|--input-shape input=1,256 --input-shape state=2,1,128|input=audio256.npy state=state.npy sr=sr8000.npy|
silero_legacy_16000|silero_vad_legacy.onnx|--input-shape input=1,512 --input-shape h=2,1,64 --input-shape c=2,1,64|input=audio512.npy sr=sr16000.npy h=h.npy c=c.npy|
silero_legacy_8000|silero_vad_legacy.onnx|--input-shape input=1,512 --input-shape h=2,1,64 --input-shape c=2,1,64|input=audio512.npy sr=sr8000.npy h=h.npy c=c.npy|
CASES
}

# Fails (returns 1) when a model in $real has no case.
real_models_covered() {
  local ok=0 f
  for f in "$real"/*.onnx; do
    real_model_cases | cut -d'|' -f2 | grep -qxF -- "$(basename "$f")" || { echo "FAIL $(basename "$f") has no case"; ok=1; }
  done
  return $ok
}

# `-i NAME=DIR/FILE` arguments for the NAME=FILE pairs in $2, files in directory $1.
input_args() {
  local kv
  for kv in $2; do printf -- '-i\n%s=%s/%s\n' "${kv%%=*}" "$1" "${kv#*=}"; done
}

# compare_npy.py's bounds for a case at a precision (--precision), or "skip: why". A 16-bit store
# rounds by 2^-11 (f16) or 2^-8 (bf16) of the value, and a model's depth compounds it: 1e-2 of
# max|ref| for f16 (what issue 14 asks of fp16 models against onnxruntime), 5e-2 for bf16. det's
# probability map is a steep sigmoid: a few pixels near its threshold move by up to 0.2 (f16) or
# 0.8 (bf16), so there the mean is bounded (measured 7e-4 and 1.6e-3; det's fp16 twin,
# tools/bench/fp16_models.py, gives an all-zero map on this input in onnxruntime, as in tgc, since
# it rounds every op to f16); rec's 6625-way softmax
# likewise (max 0.017 f16, 0.11 bf16; mean 2e-6 and 1e-5). tf32 keeps f32's storage and range but
# multiplies on tensor cores with 10 of the mantissa's bits (truncated), f16's: f16's bounds.
real_model_tolerance() {  # name precision
  case "$2:$1" in
    fp32:*) echo "--max-rel 1e-4" ;;
    tf32:*) real_model_tolerance "$1" fp16 ;;
    fp16:melspectrogram) echo "skip: its power spectrum of 16-bit-scale audio reaches 1e12, past f16's largest value 65504" ;;
    fp16:det) echo "--max-rel 0.3 --mean-rel 2e-3" ;;
    fp16:rec) echo "--max-rel 3e-2 --mean-rel 1e-5" ;;
    fp16:*) echo "--max-rel 1e-2" ;;
    bf16:det) echo "--max-rel 1 --mean-rel 5e-3" ;;
    bf16:rec) echo "--max-rel 0.2 --mean-rel 1e-4" ;;
    bf16:*) echo "--max-rel 5e-2" ;;
  esac
}
