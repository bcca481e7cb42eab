#!/usr/bin/env bash
# Generation on GGUF artifacts (issue 18), on the tiny random-weight llama (f32 and f16):
# - --logits-out: -n 0 gives llama.cpp's logits of the prompt (llama_logits --text); with -n, one
#   row per token of --tokens-out, each new token the argmax of the row before it
# - sampling: a seed repeats its tokens, another seed gives others, --top-k 1 is greedy
# - --stop STR: the greedy text up to STR's first occurrence, then the end
# - --bench P,N: one JSON line, its greedy tokens those of -n; --bench N as before
# - bad options: one line on stderr, exit 1
# - the C API of two models in one process (tests/integration/c_api/llm_generate.c)
# usage: gguf_generate.sh TGC_BINARY REPO_ROOT
set -uo pipefail
tgc="$1"; root="$2"
source "$root/tests/integration/gguf/gguf_ref.sh"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
py=/usr/bin/python3
text="The quick brown fox jumps over the lazy dog, then it runs back into the forest."
n=24  # new tokens

for t in f32 f16; do
  $py "$root/tools/gguf-ref/make_llama_gguf.py" "$ref/llama.cpp/models/ggml-vocab-llama-spm.gguf" "$work/$t.gguf" $t >/dev/null &&
    "$tgc" compile "$work/$t.gguf" --dynamic n_tokens=64 --ctx 96 -o "$work/$t" >/dev/null 2>"$work/err" ||
    { echo "FAIL $t: model or compile: $(cat "$work/err")"; exit 1; }
done
llm="$work/f32"

# --logits-out: the prompt's rows are llama.cpp's; then a row per new token.
"$ref/llama_logits" "$work/f32.gguf" "$ref/bins" "$work/ref.npy" --text "$text" --f32-kv --iters 1 >/dev/null 2>&1 ||
  { echo "FAIL llama_logits"; fail=1; }
if "$llm" -p "$text" -n 0 --logits-out "$work/prompt.npy" >/dev/null 2>"$work/err"; then
  echo -n "-p TEXT -n 0 --logits-out vs llama.cpp --text TEXT: "
  $py "$root/tests/integration/gguf/gguf_compare.py" "$work/prompt.npy" "$work/ref.npy" exact || fail=1
else
  echo "FAIL -n 0 --logits-out: $(cat "$work/err")"; fail=1
fi
"$llm" -p "$text" -n $n --tokens-out "$work/greedy.npy" --logits-out "$work/rows.npy" >"$work/greedy.txt" 2>"$work/err" ||
  { echo "FAIL -n $n: $(cat "$work/err")"; fail=1; }
$py - "$work/greedy.npy" "$work/rows.npy" "$work/prompt.npy" <<'PY' || fail=1
import sys, numpy as np
t, rows, prompt = (np.load(p) for p in sys.argv[1:4])
p = len(prompt)
ok = rows.shape[0] == len(t) and np.array_equal(rows[:p], prompt) and all(rows[i].argmax() == t[i + 1] for i in range(p - 1, len(t) - 1))
print(f'{"ok  " if ok else "FAIL"} -n --logits-out: {rows.shape[0]} rows for {len(t)} tokens, the prompt\'s as with -n 0, each new token the argmax of the row before it')
sys.exit(0 if ok else 1)
PY

# Sampling: seeds and --top-k 1.
sample() {  # OUT ARGS...
  local out="$1"; shift
  "$llm" -p "$text" -n $n --tokens-out "$out" "$@" >/dev/null 2>"$work/err" || { echo "FAIL $*: $(cat "$work/err")"; fail=1; }
}
sample "$work/s1.npy" --temp 0.8 --seed 1
sample "$work/s1b.npy" --temp 0.8 --seed 1
sample "$work/s2.npy" --temp 0.8 --seed 2
sample "$work/k1.npy" --temp 0.8 --top-k 1 --seed 3
sample "$work/hot.npy" --temp 1.5 --top-k 0 --top-p 1 --min-p 0 --seed 1
$py - "$work" <<'PY' || fail=1
import sys, numpy as np
w = sys.argv[1]
t = {k: np.load(f'{w}/{k}.npy') for k in ('greedy', 's1', 's1b', 's2', 'k1', 'hot')}
checks = [('--seed 1 twice: the same tokens', np.array_equal(t['s1'], t['s1b'])),
          ('--seed 2: other tokens than --seed 1', not np.array_equal(t['s1'], t['s2'])),
          ('--temp 0.8 --top-k 1: the greedy tokens', np.array_equal(t['k1'], t['greedy'])),
          ('--temp 1.5, every stage off: not the greedy tokens', not np.array_equal(t['hot'], t['greedy']))]
for what, ok in checks: print(f'{"ok  " if ok else "FAIL"} sampling: {what}')
sys.exit(0 if all(ok for _, ok in checks) else 1)
PY

# --stop: a stop string from the middle of the greedy text (so likely across a token boundary).
stop=$($py -c "import sys; s=open(sys.argv[1], 'rb').read().decode('utf-8', 'replace'); i=len(s)//2; print(s[i:i+3], end='')" "$work/greedy.txt")
"$llm" -p "$text" -n $n --stop "$stop" --stop "never-in-the-text" --tokens-out "$work/stopped.npy" >"$work/stopped.txt" 2>"$work/err" ||
  { echo "FAIL --stop: $(cat "$work/err")"; fail=1; }
$py - "$work" "$stop" <<'PY' || fail=1
import sys, numpy as np
w, stop = sys.argv[1], sys.argv[2].encode()
full, got = open(f'{w}/greedy.txt', 'rb').read(), open(f'{w}/stopped.txt', 'rb').read()
want = full[:full.index(stop)] + b'\n'
ok = got == want and len(np.load(f'{w}/stopped.npy')) < len(np.load(f'{w}/greedy.npy'))
print(f'{"ok  " if ok else "FAIL"} --stop {stop!r}: {got!r}' + ('' if ok else f', expected {want!r}'))
sys.exit(0 if ok else 1)
PY

# --bench P,N: one JSON line; its greedy tokens are -n's after llama_bench's prompt.
$py -c "import numpy as np; np.save('$work/p8.npy', np.array([1 + (i * 7919) % 31999 for i in range(8)], np.int32))"
if "$llm" --bench 8,6,2 --threads 1 >"$work/bench.json" 2>"$work/err" &&
  "$llm" -i tokens="$work/p8.npy" -n 7 --tokens-out "$work/p8gen.npy" >/dev/null 2>>"$work/err"; then
  $py - "$work/bench.json" "$work/p8gen.npy" <<'PY' || fail=1
import json, sys, numpy as np
lines = open(sys.argv[1]).read().splitlines()
j = json.loads(lines[0])
keys = ['prefill_tok_s', 'decode_tok_s', 'prefill_ms', 'decode_ms_per_tok', 'time_to_first_token_ms', 'threads', 'peak_rss_mb']
ok = len(lines) == 1 and all(isinstance(j.get(k), (int, float)) and j[k] > 0 for k in keys) and \
     j['greedy_tokens'] == [int(x) for x in np.load(sys.argv[2])[8:14]]
print(f'{"ok  " if ok else "FAIL"} --bench 8,6,2: {lines[0]}')
sys.exit(0 if ok else 1)
PY
else
  echo "FAIL --bench 8,6,2: $(cat "$work/err")"; fail=1
fi
"$llm" --bench 2 >"$work/bench2.txt" 2>"$work/err" && tail -1 "$work/bench2.txt" | $py -c "import json,sys; assert 'median_ms' in json.loads(sys.stdin.read())" ||
  { echo "FAIL --bench 2: $(cat "$work/err" "$work/bench2.txt")"; fail=1; }

# Bad options: one line on stderr, exit 1.
for args in "--bench 8,x" "--bench 0,4" "-p x -n 4 --temp abc" "-p x --temp 0.5" "-p x -n 4 --top-p 2" "-p x -n 4 --stop=" \
  "-p x -n 4 --top-k -1" "--bench 8,4 -n 3" "--bench 70,4" "-p x -n 4 --seed -3" "-i tokens=$work/p8.npy -n 90"; do
  # shellcheck disable=SC2086
  "$llm" $args >/dev/null 2>"$work/err"
  rc=$?
  if [ $rc != 1 ] || [ "$(wc -l <"$work/err")" != 1 ]; then echo "FAIL '$args': exit $rc, stderr: $(cat "$work/err")"; fail=1; fi
done
echo "ok   bad options: $(cat "$work/err")"

# The C API: both libraries in one process against their executables' greedy tokens and text.
"$work/f16" -p "$text" -n $n --tokens-out "$work/greedy16.npy" >"$work/greedy16.txt" 2>"$work/err" || { echo "FAIL f16 -n: $(cat "$work/err")"; fail=1; }
if "$tgc" compile "$work/f32.gguf" --dynamic n_tokens=64 --ctx 96 --shared -o "$work/liblla.so" >/dev/null 2>"$work/err" &&
  "$tgc" compile "$work/f16.gguf" --dynamic n_tokens=64 --ctx 96 --shared -o "$work/libllb.so" >/dev/null 2>>"$work/err" &&
  cc -O1 -I"$work" "$root/tests/integration/c_api/llm_generate.c" -L"$work" -llla -lllb -lm -Wl,-rpath,"$work" -o "$work/llm_generate" 2>>"$work/err"; then
  head -c -1 "$work/greedy.txt" >"$work/greedy.text"
  head -c -1 "$work/greedy16.txt" >"$work/greedy16.text"
  $py -c "import numpy as np; np.save('$work/prompt_ids.npy', np.load('$work/greedy.npy')[:len(np.load('$work/prompt.npy'))])"
  "$work/llm_generate" "$work/prompt_ids.npy" "$work/greedy.npy" "$work/greedy.text" "$work/greedy16.npy" "$work/greedy16.text" || fail=1
else
  echo "FAIL C API build: $(cat "$work/err")"; fail=1
fi
exit $fail
