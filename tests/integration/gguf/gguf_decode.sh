#!/usr/bin/env bash
# GGUF artifacts keep their K/V caches between runs (issue 17, "state across calls"): a prefill of
# a prompt, then single-token decode steps, must give the logits of one longer prefill and
# llama.cpp's (llama_logits --f32-kv over the whole text), within 1e-4 of max|logit|.
# - llama, qwen2, qwen3 and phi3, f32 and f16 weights (f16: exact against llama.cpp on the file's f32
#   dequantized copy, llama.cpp's own f16 path reported ok/WARN as in gguf_vs_llamacpp.sh)
# - the executable's --decode and the C API of a --shared build (tests/integration/c_api/llm_steps.c:
#   decode steps, set_kv_length, reset); the vulkan and qcom targets where a device exists, and
#   adreno's aarch64 artifact under qemu on arm64 lavapipe (tests/integration/arm64_vulkan.sh)
# - the artifact's tokenizer: -p TEXT gives llama.cpp's tokens and logits
# - greedy generation (-n 32) gives llama.cpp's greedy tokens (f16 models)
# - a run past the cache's rows is a one-line error
# usage: gguf_decode.sh TGC_BINARY REPO_ROOT
set -uo pipefail
tgc="$1"; root="$2"
source "$root/tests/integration/gguf/gguf_ref.sh"
source "$root/tests/integration/arm64_vulkan.sh"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
vocab="$ref/llama.cpp/models"
py=/usr/bin/python3
text="The quick brown fox jumps over the lazy dog, then it runs back into the forest where the trees are tall."
steps=8  # decode steps after the prompt's prefill

make_model() {  # arch vocab out ftype
  env ARCH="$1" $py "$root/tools/gguf-ref/make_llama_gguf.py" "$vocab/ggml-vocab-$2.gguf" "$3" "$4" >/dev/null
}

# llama.cpp's logits of $text for MODEL into OUT.npy; the token ids into $work/NAME.tokens.npy.
reference() {
  local model="$1" out="$2" name; name="$(basename "$model" .gguf)"
  "$ref/llama_logits" "$model" "$ref/bins" "$out" --text "$text" --f32-kv --iters 1 >"$work/$name.json" 2>/dev/null || return 1
  $py -c "import json,sys,numpy as np; t=json.load(open(sys.argv[1]))['tokens']; np.save(sys.argv[2], np.array(t, np.int32))" \
    "$work/$name.json" "$work/$name.tokens.npy"
}

# check NAME MODEL REF [soft-ref]: prompt prefill + decode steps vs one prefill and vs REF.
check() {
  local name="$1" model="$2" refnpy="$3" soft="${4:-}"
  local t="$work/$name.tokens.npy"
  $py -c "import numpy as np,sys; t=np.load(sys.argv[1]); k=int(sys.argv[2]); np.save(sys.argv[3], t[:-k]); np.save(sys.argv[4], t[-k:])" \
    "$t" $steps "$work/$name.prompt.npy" "$work/$name.steps.npy"
  "$tgc" compile "$model" --dynamic n_tokens=64 --ctx 96 -o "$work/$name" >/dev/null 2>"$work/err" ||
    { echo "FAIL $name: compile: $(cat "$work/err")"; fail=1; return; }
  "$work/$name" -i tokens="$t" -o "$work/$name.one" >/dev/null 2>"$work/err" &&
    "$work/$name" -i tokens="$work/$name.prompt.npy" --decode "$work/$name.steps.npy" -o "$work/$name.steps" >/dev/null 2>"$work/err" ||
    { echo "FAIL $name: run: $(cat "$work/err")"; fail=1; return; }
  local n; n=$($py -c "import numpy as np,sys; print(len(np.load(sys.argv[1])))" "$t")
  echo -n "$name prefill $((n - steps)) + $steps decode steps vs one prefill of $n: "
  $py "$root/tests/integration/gguf/gguf_compare.py" "$work/$name.steps/logits.npy" "$work/$name.one/logits.npy" exact || fail=1
  echo -n "$name prefill + decode steps vs llama.cpp: "
  $py "$root/tests/integration/gguf/gguf_compare.py" "$work/$name.steps/logits.npy" "$refnpy" exact || fail=1
  if [ -n "$soft" ]; then
    echo -n "  $name vs llama.cpp's own f16 path: "
    $py "$root/tests/integration/gguf/gguf_compare.py" "$work/$name.steps/logits.npy" "$soft" exact soft
  fi
}

declare -A vocab_of=([llama]=llama-spm [qwen2]=qwen2 [qwen3]=qwen2 [phi3]=phi-3)
for arch in llama qwen2 qwen3 phi3; do
  for ft in f32 f16; do make_model $arch ${vocab_of[$arch]} "$work/$arch-$ft.gguf" $ft; done
done
for m in llama-f32 qwen2-f32 qwen3-f32 phi3-f32; do
  reference "$work/$m.gguf" "$work/$m.ref.npy" || { echo "FAIL $m: llama_logits failed"; fail=1; continue; }
  check $m "$work/$m.gguf" "$work/$m.ref.npy"
done
for m in llama-f16 qwen2-f16 qwen3-f16 phi3-f16; do
  reference "$work/$m.gguf" "$work/$m.own.npy" && $py "$root/tests/integration/gguf/gguf_dequantize_file.py" "$work/$m.gguf" "$work/$m.deq.gguf" &&
    "$ref/llama_logits" "$work/$m.deq.gguf" "$ref/bins" "$work/$m.ref.npy" --text "$text" --f32-kv --iters 1 >/dev/null 2>&1 ||
    { echo "FAIL $m: references failed"; fail=1; continue; }
  check $m "$work/$m.gguf" "$work/$m.ref.npy" "$work/$m.own.npy"
done

# --kv-type f16: caches of f16 (rounded when written, attention in f32), prefill + decode steps
# against llama.cpp's f32-cache logits.
if "$tgc" compile "$work/llama-f32.gguf" --dynamic n_tokens=64 --ctx 96 --kv-type f16 -o "$work/kv16" >/dev/null 2>"$work/err" &&
  "$work/kv16" -i tokens="$work/llama-f32.prompt.npy" --decode "$work/llama-f32.steps.npy" -o "$work/kv16.out" >/dev/null 2>"$work/err"; then
  echo -n "llama-f32 --kv-type f16, prefill + decode steps vs llama.cpp (f32 cache): "
  $py "$root/tests/integration/gguf/gguf_compare.py" "$work/kv16.out/logits.npy" "$work/llama-f32.ref.npy" half || fail=1
else
  echo "FAIL --kv-type f16: $(cat "$work/err")"; fail=1
fi

# The tokenizer inside the artifact (llama's SentencePiece vocabulary): -p TEXT gives llama.cpp's
# tokens (BOS first), hence its logits, row for row.
if "$work/llama-f32" -p "$text" -o "$work/prompt.out" >/dev/null 2>"$work/err"; then
  echo -n "llama-f32 -p TEXT (the artifact's tokenizer) vs llama.cpp --text TEXT: "
  $py "$root/tests/integration/gguf/gguf_compare.py" "$work/prompt.out/logits.npy" "$work/llama-f32.ref.npy" exact || fail=1
else
  echo "FAIL -p: $(cat "$work/err")"; fail=1
fi

# Greedy generation (-n) on the f16 models: the same 32 tokens as llama.cpp's greedy decode
# (llama_bench, its default f16 cache) after its synthetic 16-token prompt.
for m in llama-f16 qwen2-f16 qwen3-f16 phi3-f16; do
  "$ref/llama_bench" "$work/$m.gguf" "$ref/bins" --prompt-tokens 16 --gen 32 --threads 2 --reps 1 >"$work/$m.bench.json" 2>/dev/null ||
    { echo "FAIL $m: llama_bench failed"; fail=1; continue; }
  # llama_bench's prompt: token i is 1 + (i * 7919) % (n_vocab - 1)
  $py -c "import sys,numpy as np; v=np.load(sys.argv[1]).shape[1]; np.save(sys.argv[2], np.array([1 + (i * 7919) % (v - 1) for i in range(16)], np.int32))" \
    "$work/$m.ref.npy" "$work/$m.p16.npy"
  if "$work/$m" -i tokens="$work/$m.p16.npy" -n 32 --tokens-out "$work/$m.gen.npy" >/dev/null 2>"$work/err"; then
    $py - "$work/$m.gen.npy" "$work/$m.bench.json" "$m" <<'PY' || fail=1
import json, sys, numpy as np
got = [int(t) for t in np.load(sys.argv[1])[16:]]
want = json.load(open(sys.argv[2]))['greedy_tokens']
same = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), len(want))
ok = got == want
print(f'{"ok  " if ok else "FAIL"} {sys.argv[3]} greedy -n 32: {same} of {len(want)} tokens equal llama.cpp\'s greedy decode')
sys.exit(0 if ok else 1)
PY
  else
    echo "FAIL $m -n 32: $(cat "$work/err")"; fail=1
  fi
done

# The C API: decode steps, set_kv_length and reset on a --shared build.
if "$tgc" compile "$work/qwen2-f32.gguf" --dynamic n_tokens=64 --ctx 96 --shared -o "$work/libllm.so" >/dev/null 2>"$work/err" &&
  cc -O1 -I"$work" "$root/tests/integration/c_api/llm_steps.c" -L"$work" -lllm -lm -Wl,-rpath,"$work" -o "$work/llm_steps" 2>"$work/err"; then
  "$work/llm_steps" "$work/qwen2-f32.tokens.npy" $steps "$work/qwen2-f32.ref.npy" || fail=1
else
  echo "FAIL C API build: $(cat "$work/err")"; fail=1
fi

# `tgc inspect --stage=loops` shows the decode step's schedules (GPU targets: a variant up to 8 tokens).
"$tgc" inspect "$work/llama-f32.gguf" --target=vulkan --dynamic n_tokens=64 --ctx 96 --stage=loops >"$work/loops" 2>&1
if grep -q "^# variant k[0-9]*_few (n_tokens <= 8), opts: .*GROUP" "$work/loops"; then
  echo "ok   inspect shows the few-tokens variants"
else
  echo "FAIL inspect --stage=loops shows no few-tokens variant"; fail=1
fi

# The GPU backends keep the caches on the device: vulkan (lavapipe here, validation layer on) and
# qcom (OpenCL: pocl here), where a device exists.
export POCL_KERNEL_CACHE=0 POCL_CACHE_DIR="$work/pocl" MESA_SHADER_CACHE_DIR="$work/mesa" TGC_VK_CACHE="$work/vkcache"
for target in vulkan qcom adreno; do
  if [ $target = vulkan ] && ! "$root/tests/integration/vulkan_device.sh" "$tgc" "$root" >"$work/err" 2>&1; then echo "SKIP vulkan: $(tail -1 "$work/err")"; continue; fi
  if [ $target = qcom ] && [ "$(clinfo -l 2>/dev/null | grep -c Device)" = 0 ]; then
    echo "SKIP qcom: no OpenCL device"; continue
  fi
  if [ $target = adreno ] && [ -z "$ARM64_VK_ROOT" ]; then echo "SKIP adreno: no arm64 Vulkan root"; continue; fi
  names="llama-f32 qwen3-f32 phi3-f32"; triple=""; [ $target = qcom ] && names=llama-f32 triple=--triple=x86_64-linux-gnu
  run=env; [ $target = adreno ] && names=llama-f32 run=run_arm64_vulkan  # aarch64, under qemu
  for name in $names; do
    if "$tgc" compile "$work/$name.gguf" --dynamic n_tokens=64 --ctx 96 --target=$target $triple -o "$work/$name.$target" >/dev/null 2>"$work/err" &&
      TGC_VK_VALIDATION=1 $run "$work/$name.$target" -i tokens="$work/$name.prompt.npy" --decode "$work/$name.steps.npy" -o "$work/$name.$target.out" >/dev/null 2>"$work/err"; then
      echo -n "$name --target=$target prefill + decode steps vs llama.cpp: "
      $py "$root/tests/integration/gguf/gguf_compare.py" "$work/$name.$target.out/logits.npy" "$work/$name.ref.npy" exact || fail=1
      # --bench names the device memory the model holds (vulkan, cuda): at least its weights' bytes.
      [ $target = vulkan ] || continue
      "$work/$name.$target" --bench 4,2,1 >"$work/bench.json" 2>"$work/err" || { echo "FAIL $target --bench: $(cat "$work/err")"; fail=1; }
      $py - "$work/bench.json" "$work/$name.gguf" "$target" <<'PY' || fail=1
import json, os, sys
b = json.loads(open(sys.argv[1]).read())
ok = b.get('device_mb', 0) * 1e6 >= 0.9 * os.path.getsize(sys.argv[2])
print(f'{"ok  " if ok else "FAIL"} --target={sys.argv[3]} --bench device_mb {b.get("device_mb")} (file {os.path.getsize(sys.argv[2]) / 1e6:.1f} MB)')
sys.exit(0 if ok else 1)
PY
    else
      echo "FAIL $name --target=$target: $(cat "$work/err")"; fail=1
    fi
  done
done

# Past the cache's rows: one line naming the cache, exit 1, no output written.
"$tgc" compile "$work/llama-f32.gguf" --dynamic n_tokens=16 --ctx 16 -o "$work/small" >/dev/null 2>&1 || { echo "FAIL compile --ctx 16"; fail=1; }
$py -c "import numpy as np; np.save('$work/t12.npy', np.arange(1, 13, dtype=np.int32)); np.save('$work/t5.npy', np.arange(1, 6, dtype=np.int32))"
if "$work/small" -i tokens="$work/t12.npy" --decode "$work/t5.npy" -o "$work/full.out" >/dev/null 2>"$work/err"; then
  echo "FAIL a run past 16 cache rows succeeded"; fail=1
elif [ "$(wc -l <"$work/err")" != 1 ] || ! grep -q "KV cache is full" "$work/err" || [ -e "$work/full.out" ]; then
  echo "FAIL cache overflow error: $(cat "$work/err")"; fail=1
else
  echo "ok   past the cache: $(cat "$work/err")"
fi
exit $fail
