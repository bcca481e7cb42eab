#!/usr/bin/env bash
# --chat on a GGUF artifact (issue 41), stdin piped, greedy, on a tiny random-weight llama with
# Llama 3.1's chat template:
# - history in the cache == re-prefill: the tokens the cache holds after several turns
#   (--tokens-out), run in one go with -n R, give the last reply's R tokens again; also with
#   Qwen 2.5's (qwen2), Phi-3.5's (phi3), Mistral 7B v0.2's and Gemma 2's templates
# - /reset: the conversation after it holds what the same turns hold from a fresh start
# - context shift on a small --ctx: the oldest turns dropped, the system message kept, every turn
#   answered, and the cache after it again what a re-prefill gives
# - errors in one line: --system without --chat, a file without a chat template, a template tgc
#   does not render; --chat-template NAME for a file without one; -n past the cache without --chat
# - the C API (tests/integration/c_api/llm_chat.c): llm_chat_apply_template, then llm_tokenize, gives
#   the tokens --chat runs
# usage: gguf_chat.sh TGC_BINARY REPO_ROOT
set -uo pipefail
tgc="$1"; root="$2"
source "$root/tests/integration/gguf/gguf_ref.sh"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
py=/usr/bin/python3
tmpl="$root/tools/gguf-ref/chat-templates"
model() {  # NAME CTX [VOCAB=name] [env...]: a model with Llama 3.1's template and vocabulary unless said otherwise
  local name="$1" ctx="$2" vocab=llama-bpe; shift 2
  case "${1:-}" in VOCAB=*) vocab="${1#VOCAB=}"; shift;; esac
  env CHAT_TEMPLATE="$tmpl/llama-3.1.jinja" "$@" $py "$root/tools/gguf-ref/make_llama_gguf.py" \
    "$ref/llama.cpp/models/ggml-vocab-$vocab.gguf" "$work/$name.gguf" f32 >/dev/null &&
    "$tgc" compile "$work/$name.gguf" --dynamic n_tokens="$ctx" --ctx "$ctx" -o "$work/$name" >/dev/null 2>"$work/err" ||
    { echo "FAIL $name: model or compile: $(cat "$work/err")"; exit 1; }
}
model chat 128
model small 64

# One go: the cache's tokens but the last reply's R, then -n R: the same tokens.
one_go() {  # MODEL CONV.npy STDERR WHAT
  local llm="$1" conv="$2" log="$3" what="$4"
  local r; r=$(grep -o 'reply [0-9]* tokens' "$log" | tail -1 | grep -o '[0-9]*')
  $py -c "import sys, numpy as np; t = np.load(sys.argv[1]); np.save(sys.argv[2], t[:len(t) - int(sys.argv[3])])" "$conv" "$work/prefix.npy" "$r" &&
    "$llm" -i tokens="$work/prefix.npy" -n "$r" --tokens-out "$work/one.npy" >/dev/null 2>"$work/err" ||
    { echo "FAIL $what: one go: $(cat "$work/err")"; fail=1; return; }
  $py - "$conv" "$work/one.npy" "$what" "$r" <<'PY' || fail=1
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
ok = np.array_equal(a, b)
print(f'{"ok  " if ok else "FAIL"} {sys.argv[3]}: {len(a)} tokens in the cache; run in one go, the last reply\'s {sys.argv[4]} tokens again')
sys.exit(0 if ok else 1)
PY
}

chat() {  # MODEL OUT INPUT ARGS...: stdout to OUT.txt, stderr to OUT.err, the cache's tokens to OUT.npy
  local llm="$1" out="$2" input="$3"; shift 3
  printf '%s' "$input" | "$llm" --chat --tokens-out "$out.npy" "$@" >"$out.txt" 2>"$out.err" ||
    { echo "FAIL --chat $*: $(cat "$out.err")"; fail=1; }
}

# Several turns, then the same after a /reset.
turns=$'Hello there\nHow are you today?\nTell me a story about a fox.\n'
chat "$work/chat" "$work/a" "$turns" --system "You are terse." -n 10
one_go "$work/chat" "$work/a.npy" "$work/a.err" "--chat, 3 turns, llama3"
# The same on other families' templates (architecture, vocabulary, template; Phi-3's name rule)
for c in qwen2:qwen2:qwen-2.5:x phi3:phi-3:phi-3.5:Phi3 llama:llama-spm:mistral-v1:x llama:llama-spm:gemma-2:x; do
  IFS=: read -r arch vocab t gname <<<"$c"
  model "$t" 128 VOCAB="$vocab" ARCH="$arch" CHAT_TEMPLATE="$tmpl/$t.jinja" NAME="$gname"
  chat "$work/$t" "$work/$t" "$turns" --system "You are terse." -n 10
  one_go "$work/$t" "$work/$t.npy" "$work/$t.err" "--chat, 3 turns, $t ($arch)"
done
chat "$work/chat" "$work/b" $'Something else first\n/reset\nHello there\nHow are you today?\nTell me a story about a fox.\n' --system "You are terse." -n 10
$py - "$work/a.npy" "$work/b.npy" "$work/a.txt" "$work/b.txt" <<'PY' || fail=1
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
ta, tb = open(sys.argv[3], 'rb').read(), open(sys.argv[4], 'rb').read()
ok = np.array_equal(a, b) and tb.endswith(ta) and len(tb) > len(ta)
print(f'{"ok  " if ok else "FAIL"} /reset: the turns after it hold the cache and print the text of a fresh start')
sys.exit(0 if ok else 1)
PY
lines=$(grep -c '^\[prompt' "$work/b.err")
[ "$lines" = 4 ] && echo "ok   a line on stderr per turn" || { echo "FAIL $lines lines on stderr for 4 turns"; fail=1; }

# Context shift: 64 positions, 8-token replies.
chat "$work/small" "$work/s" $'First question\nSecond question\nThird question\nFourth question\nFifth question\n' --system "You are terse." -n 8
answered=$(grep -c '^\[prompt' "$work/s.err")
if grep -q '^\[context full' "$work/s.err" && [ "$answered" = 5 ]; then
  echo "ok   context shift: $(grep -c '^\[context full' "$work/s.err") shifts, 5 turns answered"
else
  echo "FAIL context shift: $(cat "$work/s.err")"; fail=1
fi
one_go "$work/small" "$work/s.npy" "$work/s.err" "--chat after a context shift"
chat "$work/small" "$work/first" $'Fifth question\n' --system "You are terse." -n 8
$py - "$work/s.npy" "$work/first.npy" <<'PY' || fail=1
import sys, numpy as np
s, f = np.load(sys.argv[1]), np.load(sys.argv[2])
head = 7  # BOS and the system header: <|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.
ok = np.array_equal(s[:head], f[:head]) and len(s) <= 64
print(f'{"ok  " if ok else "FAIL"} context shift: the cache starts with the system message, {len(s)} of 64 positions')
sys.exit(0 if ok else 1)
PY
big=$(printf 'word %.0s' $(seq 80))
chat "$work/small" "$work/big" "$big"$'\nHello\n' -n 8
grep -q 'not run' "$work/big.err" && [ "$(grep -c '^\[prompt' "$work/big.err")" = 1 ] &&
  echo "ok   a turn longer than the context: said so, and the next turn answered" ||
  { echo "FAIL a turn longer than the context: $(cat "$work/big.err")"; fail=1; }

# Errors, and --chat-template for a file without a template.
expect_error() {  # WHAT PATTERN CMD...
  local what="$1" pat="$2"; shift 2
  if echo hi | "$@" >/dev/null 2>"$work/err"; then echo "FAIL $what: exit 0"; fail=1
  elif [ "$(wc -l <"$work/err")" = 1 ] && grep -q "$pat" "$work/err"; then echo "ok   $what: $(cat "$work/err")"
  else echo "FAIL $what: $(cat "$work/err")"; fail=1; fi
}
model plain 64 CHAT_TEMPLATE=
printf '%s' "{% for m in messages %}{% if m['role'] == 'user' %}USER: {{ m['content'] }}
{% else %}ASSISTANT: {{ m['content'] }}</s>
{% endif %}{% endfor %}ASSISTANT:" >"$work/vicuna.jinja"
model vicuna 64 CHAT_TEMPLATE="$work/vicuna.jinja"
expect_error "--system without --chat" "goes with --chat" "$work/chat" --system hi -n 4
expect_error "--chat on a file without a template" "no tokenizer.chat_template" "$work/plain" --chat
expect_error "--chat on a template tgc does not render" "'vicuna'" "$work/vicuna" --chat
expect_error "-n past the cache without --chat" "larger --ctx" "$work/small" -p "Hello" -n 100
chat "$work/plain" "$work/named" $'Hello\n' --chat-template llama3 --system "You are terse." -n 8
chat "$work/chat" "$work/file" $'Hello\n' --system "You are terse." -n 8
cmp -s "$work/named.npy" "$work/file.npy" && echo "ok   --chat-template llama3 on a file without one: the tokens of the file's template" ||
  { echo "FAIL --chat-template llama3"; fail=1; }

# The C API: llm_chat_apply_template and llm_tokenize give --chat's prompt tokens.
r=$(grep -o 'reply [0-9]* tokens' "$work/file.err" | grep -o '[0-9]*')
if "$tgc" compile "$work/chat.gguf" --dynamic n_tokens=128 --ctx 128 --shared -o "$work/libllm.so" >/dev/null 2>"$work/err" &&
  cc -O1 -I"$work" -I"$root/tests/integration/c_api" "$root/tests/integration/c_api/llm_chat.c" -L"$work" -lllm -Wl,-rpath,"$work" \
    -o "$work/llm_chat" 2>>"$work/err"; then
  "$work/llm_chat" "You are terse." "Hello" "$work/file.npy" "$r" || fail=1
else
  echo "FAIL C API build: $(cat "$work/err")"; fail=1
fi
exit $fail
