#!/usr/bin/env bash
# LLM speed beside llama.cpp (issue 18, docs/performance-llm.md): random-weight GGUFs of one shape
# in several weight types, each compiled by tgc and run with `--bench P,N` beside llama.cpp's
# llama_bench on the very same file, same thread count, alternating, best of --rounds.
# Prints one markdown table: prefill and decode tok/s of both, the ratios (tgc / llama.cpp, higher
# is better for tgc), the fraction of the memcpy ceiling a decode step reaches (weight bytes read
# per token, the token embedding excluded, x tok/s; bench-ceilings' memcpy counts read + write),
# peak RSS and whether the greedy tokens agree.
#
# usage: tools/bench/llm_bench.sh [--shape "E=2048 F=8192 L=16 H=32 HKV=8"] [--arch llama|qwen2]
#          [--types f16,q8_0,q4_0,q4_k_m] [--threads 1,2] [--prompt 64] [--gen 32] [--rounds 2]
#          [--work DIR] [--markdown FILE]
# The default shape is Llama-3.2-1B's (with the 32k llama-spm vocabulary): 2.2 GB in f16, minutes to
# generate; L=2 keeps every per-token ratio and takes seconds.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${TGC_BUILD_DIR:-$root/build}"
ref="${TGC_GGUF_REF:-$root/.gguf-ref}"
shape="E=2048 F=8192 L=16 H=32 HKV=8"; arch=llama; types=f16,q8_0,q4_0,q4_k_m
threads=1,2; prompt=64; gen=32; rounds=2; work="$build/llm-bench"; markdown=""
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shape="$2"; shift 2 ;;
    --arch) arch="$2"; shift 2 ;;
    --types) types="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --prompt) prompt="$2"; shift 2 ;;
    --gen) gen="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --markdown) markdown="$2"; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "llm_bench.sh: unknown option '$1' (--help)" >&2; exit 1 ;;
  esac
done
[ -x "$ref/llama_bench" ] || "$root/tools/gguf-ref/setup.sh" "$ref" >&2
cmake --build "$build" --target tgc bench-ceilings >&2
export PYTHONPATH="$ref/llama.cpp/gguf-py${PYTHONPATH:+:$PYTHONPATH}"
py=/usr/bin/python3
mkdir -p "$work"
vocab="$ref/llama.cpp/models/ggml-vocab-$([ "$arch" = qwen2 ] && echo qwen2 || echo llama-spm).gguf"
tag="$arch-$(echo "$shape" | tr -d ' =')"
declare -A ftype=([f16]=1 [q4_0]=2 [q8_0]=7 [q4_k_m]=15 [q6_k]=18)

base="$work/$tag-f16.gguf"
if [ ! -f "$base" ]; then
  echo "llm_bench: writing $base ($shape)" >&2
  env ARCH="$arch" $shape CTX=4096 $py "$root/tools/gguf-ref/make_llama_gguf.py" "$vocab" "$base" f16 >&2
fi
json() { $py -c "import json,sys; d=json.loads(sys.argv[1]); print(d[sys.argv[2]])" "$1" "$2"; }
best() { $py -c "import sys; print(max(float(x) for x in sys.argv[1:]))" "$@"; }

rows=()
for t in ${types//,/ }; do
  [ -n "${ftype[$t]:-}" ] || { echo "llm_bench: unknown type '$t' (f16 q8_0 q4_0 q4_k_m q6_k)" >&2; exit 1; }
  model="$work/$tag-$t.gguf"
  [ -f "$model" ] || "$ref/llama_quantize" "$base" "$model" "${ftype[$t]}" >/dev/null 2>&1
  exe="$work/$tag-$t"
  echo "llm_bench: compiling $model" >&2
  "$build/tgc" compile "$model" --dynamic n_tokens="$prompt" --ctx $((prompt + gen + 8)) -o "$exe" >&2
  embd=$("$build/tgc" inspect "$model" --stage=meta | awk '$1 == "token_embd.weight" {print $NF}')
  bytes=$(( $(stat -c %s "$model") - ${embd:-0} ))
  for th in ${threads//,/ }; do
    ceiling=$(json "$("$build/bench-ceilings" --threads "$th" --memcpy-mib 256 --budget 1 | grep '"memcpy"')" gbps)
    tp=(); td=(); lp=(); ld=()
    for r in $(seq "$rounds"); do
      echo "llm_bench: $t, $th thread(s), round $r" >&2
      mine=$("$exe" --bench "$prompt,$gen" --threads "$th" | tail -1)
      theirs=$("$ref/llama_bench" "$model" "$ref/bins" --prompt-tokens "$prompt" --gen "$gen" --threads "$th" --reps 3 2>/dev/null | tail -1)
      tp+=("$(json "$mine" prefill_tok_s)"); td+=("$(json "$mine" decode_tok_s)")
      lp+=("$(json "$theirs" prefill_tok_s)"); ld+=("$(json "$theirs" decode_tok_s)")
    done
    same=$($py -c "import json,sys; a=json.loads(sys.argv[1])['greedy_tokens']; b=json.loads(sys.argv[2])['greedy_tokens']
n=next((i for i,(x,y) in enumerate(zip(a,b)) if x!=y), min(len(a),len(b))); print('all %d' % n if n==min(len(a),len(b)) else 'first %d' % n)" "$mine" "$theirs")
    P=$(best "${tp[@]}"); D=$(best "${td[@]}"); LP=$(best "${lp[@]}"); LD=$(best "${ld[@]}")
    rows+=("$($py -c "import sys
t,th,P,D,LP,LD,b,c,rss,same=sys.argv[1:]
P,D,LP,LD,b,c=map(float,(P,D,LP,LD,b,c))
print('| %s | %s | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %.0f%% | %s | %s |' % (t,th,P,LP,P/LP,D,LD,D/LD,100*b*D/(c*1e9/2),rss,same))" \
      "$t" "$th" "$P" "$D" "$LP" "$LD" "$bytes" "$ceiling" "$(json "$mine" peak_rss_mb)" "$same")")
    echo "${rows[-1]}" >&2
  done
done

table="$(printf '%s\n' \
  "| type | threads | prefill tok/s tgc | llama.cpp | ratio | decode tok/s tgc | llama.cpp | ratio | memcpy ceiling reached | peak RSS MB | greedy tokens equal |" \
  "|---|---|---|---|---|---|---|---|---|---|---|" "${rows[@]}")"
echo "$table"
if [ -n "$markdown" ]; then
  {
    echo "# LLM speed: tgc beside llama.cpp"
    echo
    echo "Measured by \`tools/bench/llm_bench.sh --shape \"$shape\" --arch $arch --types $types --threads $threads --prompt $prompt --gen $gen --rounds $rounds\`"
    echo "on $(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores."
    echo "Random-weight $arch GGUF ($shape, ${vocab##*/}); prefill of $prompt tokens, $gen greedy decode steps;"
    echo "llama.cpp is llama_bench (tools/gguf-ref) on the same file. Best of $rounds alternating rounds."
    echo
    echo "$table"
  } >"$markdown"
fi
