#!/usr/bin/env bash
# The byte-level BPE tokenizer inside artifacts, end to end: tiny random-weight models with real
# vocabularies (qwen2 with qwen2's, no BOS; llama with llama3's, BOS by default), compiled by tgc;
# `-p TEXT` must give the token ids llama.cpp gives for `--text TEXT` (llama_logits), and --info
# must name the tokenizer; generation (-n) streams the new tokens' text. Also: a GGUF whose
# pre-tokenizer tgc lacks fails the compile in one line.
# usage: gguf_bpe_prompt.sh TGC_BINARY REPO_ROOT
set -uo pipefail
tgc="$1"; root="$2"
source "$root/tests/integration/gguf/gguf_ref.sh"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
py=/usr/bin/python3
vocab="$ref/llama.cpp/models"
text=$'Hello world! It\'s 2024: naïve café, 12345 tokens\n\n   indented\tline — 你好 🙂 <|im_start|> don\'T'

for pair in qwen2:qwen2 llama:llama-bpe; do
  arch="${pair%%:*}"; voc="${pair##*:}"; m="$work/$arch-$voc"
  env ARCH="$arch" $py "$root/tools/gguf-ref/make_llama_gguf.py" "$vocab/ggml-vocab-$voc.gguf" "$m.gguf" f32 >/dev/null ||
    { echo "FAIL $voc: make_llama_gguf.py"; fail=1; continue; }
  "$ref/llama_logits" "$m.gguf" "$ref/bins" "$m.ref.npy" --text "$text" --iters 1 >"$m.json" 2>/dev/null ||
    { echo "FAIL $voc: llama_logits"; fail=1; continue; }
  "$tgc" compile "$m.gguf" --dynamic n_tokens=64 --ctx 64 -o "$m" >/dev/null 2>"$work/err" ||
    { echo "FAIL $voc: compile: $(cat "$work/err")"; fail=1; continue; }
  "$m" -p "$text" --tokens-out "$m.tokens.npy" -o "$m.out" >/dev/null 2>"$work/err" ||
    { echo "FAIL $voc: -p: $(cat "$work/err")"; fail=1; continue; }
  info="$("$m" --info | grep '^tokenizer:')"
  $py - "$m.tokens.npy" "$m.json" "$arch with the $voc vocabulary" "$info" <<'PY' || fail=1
import json, sys, numpy as np
got = [int(t) for t in np.load(sys.argv[1])]
want = json.load(open(sys.argv[2]))['tokens']
ok = got == want and 'byte-level BPE' in sys.argv[4]
print(f'{"ok  " if ok else "FAIL"} {sys.argv[3]}: -p TEXT gives {len(got)} tokens, llama.cpp {len(want)}'
      f'{"" if got == want else f" (tgc {got} vs llama.cpp {want})"}; --info "{sys.argv[4]}"')
sys.exit(0 if ok else 1)
PY
done

# Generation streams the new tokens' text: on the qwen2 artifact, -n 16's stdout must be the
# generated ids' bytes as gguf-py's vocabulary and GPT-2's byte map spell them.
m="$work/qwen2-qwen2"
if "$m" -p "$text" -n 16 --tokens-out "$m.gen.npy" >"$m.gen.txt" 2>"$work/err"; then
  $py - "$m.gguf" "$m.gen.npy" "$m.tokens.npy" "$m.gen.txt" <<'PY' || fail=1
import sys, numpy as np, gguf
r = gguf.GGUFReader(sys.argv[1])
tokens = r.fields['tokenizer.ggml.tokens'].contents()
types = r.fields['tokenizer.ggml.token_type'].contents()
printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
byte_of = {chr(b): b for b in printable}
byte_of.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in printable)})
def piece(i):
    if types[i] == 4: return tokens[i].encode()              # user-defined: verbatim
    if types[i] != 1: return b''                             # control and the rest: nothing
    return bytes(byte_of[c] for c in tokens[i])
new = [int(t) for t in np.load(sys.argv[2])][len(np.load(sys.argv[3])):]
want = b''.join(piece(i) for i in new) + b'\n'
got = open(sys.argv[4], 'rb').read()
ok = got == want
print(f'{"ok  " if ok else "FAIL"} qwen2 -n 16 streams the text of its {len(new)} tokens ({len(want) - 1} bytes){"" if ok else f": {got!r} vs {want!r}"}')
sys.exit(0 if ok else 1)
PY
else
  echo "FAIL qwen2 -n 16: $(cat "$work/err")"; fail=1
fi

# An unsupported pre-tokenizer: the compile fails, one line naming the file and the pre-tokenizer.
# (The qwen2 model with tokenizer.ggml.pre "qwen2" renamed "qwen9", a name of the same length.)
$py - "$work/qwen2-qwen2.gguf" "$work/odd.gguf" <<'PY'
import struct, sys
data = open(sys.argv[1], 'rb').read()
key = b'tokenizer.ggml.pre' + struct.pack('<IQ', 8, 5) + b'qwen2'  # string value: type 8, length 5
assert data.count(key) == 1
open(sys.argv[2], 'wb').write(data.replace(key, key[:-1] + b'9'))
PY
expect_compile_error "$work/odd.gguf" "odd.gguf.*'qwen9'" "a GGUF with pre-tokenizer 'qwen9'"
exit $fail
