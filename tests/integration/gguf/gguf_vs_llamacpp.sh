#!/usr/bin/env bash
# GGUF models compiled by tgc against llama.cpp on the same file (../shared/gguf/README.md):
# random-weight llama, qwen2, qwen3 and phi3 models with real tokenizers (tools/gguf-ref/make_llama_gguf.py),
# quantized by llama.cpp's own quantizer, logits of every prompt position compared with
# llama_logits (f32 K/V cache, no flash attention: llama.cpp's f32 attention).
# - f32 weights: max|diff| <= 1e-4 * max|logit|.
# - every other type (f16 bf16; q8_0 q4_0 q5_0 q4_K_M for llama, q4_1 q5_1 q5_K_M q6_K for qwen2),
#   compiled with --quant-matmul=f32: max|diff| <= 1e-4 * max|logit| against llama.cpp on a copy of
#   the file dequantized to f32 by gguf-py: tgc computes exactly that (weights dequantized
#   exactly, activations in f32). Failing this fails the test.
# - the same files compiled as users get them against llama.cpp's own f16/bf16/quantized path,
#   with issue 17's bounds (f16/bf16: 1e-4; quantized: relative L2 <= 2e-2, same argmax at >= 95%
#   of rows). q8_0 fails the test on a miss: tgc multiplies it as llama.cpp does, int8 dot
#   products over q8_0-quantized activations (frontend/gguf/int8_matmul.h; measured 9.4e-4). The
#   others are reported as ok or WARN: llama.cpp rounds activations to f16/bf16 and quantizes
#   them to q8_K for the K-quants, tgc does not; and where an activation rounds to the other
#   int8 neighbour (last-bit differences of the f32 code before it, which vary with the CPU's
#   vector width) the attention carries the step to every later row of these random-weight
#   models (q4_0 with its q6_K head: 1.4e-2 on AVX-512, rows equal to 1e-7 until the first such
#   step), too close to the bound to hold on every machine.
# - the artifact's weights are the file's tensor bytes, unchanged (--weights=external)
# - a run-time token count (--dynamic n_tokens=MAX) equals the fixed one
# usage: gguf_vs_llamacpp.sh TGC_BINARY REPO_ROOT
set -uo pipefail
tgc="$1"; root="$2"
source "$root/tests/integration/gguf/gguf_ref.sh"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
vocab="$ref/llama.cpp/models"
py=/usr/bin/python3
text="The quick brown fox jumps over the lazy dog, then it runs back into the forest where the trees are tall and the rivers are cold. Nobody knows how far it went, or whether it ever came back to the village at the edge of the hills."

make_model() {  # arch vocab out ftype [env...]
  local arch="$1" voc="$2" out="$3" ft="$4"; shift 4
  env ARCH="$arch" "$@" $py "$root/tools/gguf-ref/make_llama_gguf.py" "$vocab/ggml-vocab-$voc.gguf" "$out" "$ft" >/dev/null
}

# compare MODEL MODE [soft]: llama.cpp's logits of $text vs the compiled artifact's.
compare() {
  local model="$1" mode="$2" soft="${3:-}"
  local name; name="$(basename "$model" .gguf)"
  "$ref/llama_logits" "$model" "$ref/bins" "$work/$name.ref.npy" --text "$text" --f32-kv --iters 1 >"$work/$name.json" 2>/dev/null ||
    { echo "FAIL $name: llama_logits failed"; fail=1; return; }
  $py -c "import json,sys,numpy as np; t=json.load(open(sys.argv[1]))['tokens']; np.save(sys.argv[2], np.array(t, np.int32))" \
    "$work/$name.json" "$work/$name.tokens.npy"
  local n; n=$($py -c "import numpy as np,sys; print(len(np.load(sys.argv[1])))" "$work/$name.tokens.npy")
  "$tgc" compile "$model" --input-shape tokens="$n" -o "$work/$name" >/dev/null 2>"$work/err" ||
    { echo "FAIL $name: compile: $(cat "$work/err")"; fail=1; return; }
  "$work/$name" -i tokens="$work/$name.tokens.npy" -o "$work/$name.out" >/dev/null 2>"$work/err" ||
    { echo "FAIL $name: run: $(cat "$work/err")"; fail=1; return; }
  echo -n "$name ($n tokens): "
  $py "$root/tests/integration/gguf/gguf_compare.py" "$work/$name.out/logits.npy" "$work/$name.ref.npy" "$mode" $soft || fail=1
}

# exact_vs_dequantized MODEL: MODEL compiled with f32 matmuls vs llama.cpp on MODEL's f32 copy.
exact_vs_dequantized() {
  local model="$1" name; name="$(basename "$model" .gguf)"
  local n; n=$($py -c "import numpy as np,sys; print(len(np.load(sys.argv[1])))" "$work/$name.tokens.npy")
  "$tgc" compile "$model" --input-shape tokens="$n" --quant-matmul=f32 -o "$work/$name" >/dev/null 2>"$work/err" &&
    "$work/$name" -i tokens="$work/$name.tokens.npy" -o "$work/$name.out" >/dev/null 2>"$work/err" &&
    $py "$root/tests/integration/gguf/gguf_dequantize_file.py" "$model" "$work/deq.gguf" &&
    "$ref/llama_logits" "$work/deq.gguf" "$ref/bins" "$work/deq.ref.npy" --text "$text" --f32-kv --iters 1 >/dev/null 2>&1 &&
    echo -n "  $name vs llama.cpp on its f32 dequantized copy: " &&
    $py "$root/tests/integration/gguf/gguf_compare.py" "$work/$name.out/logits.npy" "$work/deq.ref.npy" exact || { echo "FAIL $name vs its dequantized copy"; fail=1; }
}

# Unquantized: the default toy shape (E=64), llama and qwen2; f16 and bf16 from llama.cpp's quantizer.
make_model llama llama-spm "$work/llama-f32.gguf" f32
make_model qwen2 qwen2 "$work/qwen2-f32.gguf" f32
make_model qwen3 qwen2 "$work/qwen3-f32.gguf" f32
make_model phi3 phi-3 "$work/phi3-f32.gguf" f32
make_model llama llama-spm "$work/llama-f16.gguf" f16
"$ref/llama_quantize" "$work/llama-f32.gguf" "$work/llama-bf16.gguf" 32 >/dev/null 2>&1 || { echo "FAIL llama_quantize bf16"; fail=1; }
for m in llama-f32 qwen2-f32 qwen3-f32 phi3-f32; do compare "$work/$m.gguf" exact; done
for m in llama-f16 llama-bf16; do compare "$work/$m.gguf" exact soft; exact_vs_dequantized "$work/$m.gguf"; done

# The artifact's weights hold each GGUF tensor's bytes unchanged, and little else.
"$tgc" compile "$work/llama-f16.gguf" --input-shape tokens=4 --weights=external -o "$work/ext" >/dev/null 2>"$work/err" ||
  { echo "FAIL external weights compile: $(cat "$work/err")"; fail=1; }
$py - "$work/llama-f16.gguf" "$work" <<'PY' || fail=1
import sys, glob, os, gguf
r = gguf.GGUFReader(sys.argv[1])
files = [f for f in glob.glob(sys.argv[2] + '/ext*') if f != sys.argv[2] + '/ext']
blob = b''.join(open(f, 'rb').read() for f in files)
tensor_bytes = sum(t.data.nbytes for t in r.tensors)
missing = [t.name for t in r.tensors if bytes(t.data.tobytes()) not in blob]
ok = not missing and len(blob) <= tensor_bytes * 1.05 + 65536
print(f'{"ok  " if ok else "FAIL"} external weights: {len(r.tensors)} tensors, {len(missing)} not found byte for byte; '
      f'{len(blob)} weight bytes for {tensor_bytes} tensor bytes')
sys.exit(0 if ok else 1)
PY

# A run-time token count: compiled once for up to 96 tokens, run at the prompt's length.
n=$($py -c "import numpy as np; print(len(np.load('$work/llama-f32.tokens.npy')))")
"$tgc" compile "$work/llama-f32.gguf" --dynamic n_tokens=96 -o "$work/dyn" >/dev/null 2>"$work/err" &&
  "$work/dyn" -i tokens="$work/llama-f32.tokens.npy" -o "$work/dyn.out" >/dev/null 2>"$work/err" &&
  echo -n "llama-f32 --dynamic n_tokens=96 ($n tokens): " &&
  $py "$root/tests/integration/gguf/gguf_compare.py" "$work/dyn.out/logits.npy" "$work/llama-f32.ref.npy" exact || { echo "FAIL --dynamic: $(cat "$work/err")"; fail=1; }

# Quantized: rows of 256 so that the k-quants apply (llama.cpp falls back otherwise). Each
# architecture takes half of the file types (the test's run time; every block type is still read,
# in one architecture or the other, as the check below the loop makes sure): llama q8_0, q4_0,
# q5_0, q4_K_M (q4_K + q6_K); qwen2 q4_1, q5_1, q5_K_M (q5_K + q6_K), q6_K.
declare -A qtypes=([llama]="7:q8_0 2:q4_0 8:q5_0 15:q4_K_M" [qwen2]="3:q4_1 9:q5_1 17:q5_K_M 18:q6_K"
  [qwen3]="2:q4_0" [phi3]="15:q4_K_M")
declare -A vocab_of=([llama]=llama-spm [qwen2]=qwen2 [qwen3]=qwen2 [phi3]=phi-3)
for arch in llama qwen2 qwen3 phi3; do
  voc=${vocab_of[$arch]}
  make_model $arch $voc "$work/$arch-base.gguf" f32 E=256 F=512 H=4 HKV=2
  for q in ${qtypes[$arch]}; do
    out="$work/$arch-${q#*:}.gguf"
    "$ref/llama_quantize" "$work/$arch-base.gguf" "$out" "${q%%:*}" >/dev/null 2>&1 || { echo "FAIL llama_quantize $q"; fail=1; continue; }
    soft=soft; [ "${q#*:}" = q8_0 ] && soft=
    compare "$out" quant $soft
    exact_vs_dequantized "$out"
    "$tgc" inspect "$out" --stage=meta | awk '/^# tensors/ {t=1; next} t {print $2}' >>"$work/types"
    rm -f "$out" "$work/$arch-${q#*:}"
  done
done
# Every block type tgc reads was in some file.
for t in q8_0 q4_0 q4_1 q5_0 q5_1 q4_K q5_K q6_K; do
  grep -qx "$t" "$work/types" || { echo "FAIL no quantized model held a $t tensor"; fail=1; }
done
echo "tensor types seen: $(sort -u "$work/types" | tr '\n' ' ')"
exit $fail
