#!/usr/bin/env bash
# The artifact's tokenizer (runtime-stub/tokenizer.c) against llama.cpp's own test vectors for
# every SentencePiece-style ("llama") vocabulary in the llama.cpp tree with .inp/.out files.
# usage: gguf_tokenizer.sh GGUF_TOKENIZE_BINARY REPO_ROOT
set -uo pipefail
bin="$1"; root="$2"
source "$root/tests/gguf_ref.sh"
fail=0
for v in llama-spm phi-3; do
  f="$ref/llama.cpp/models/ggml-vocab-$v.gguf"
  "$bin" "$f" "$f.inp" "$f.out" || fail=1
done
exit $fail
