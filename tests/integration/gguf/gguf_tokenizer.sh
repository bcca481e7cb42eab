#!/usr/bin/env bash
# The artifact's tokenizer (runtime-stub/tokenizer*.c) against llama.cpp's own test vectors for
# every vocabulary in the llama.cpp tree with .inp/.out files whose tokenizer tgc implements:
# SentencePiece-style ("llama") and byte-level BPE ("gpt2", every pre-tokenizer there); llama.cpp's
# ids must also detokenize back to each text.
# usage: gguf_tokenizer.sh GGUF_TOKENIZE_BINARY REPO_ROOT
set -uo pipefail
bin="$1"; root="$2"
source "$root/tests/integration/gguf/gguf_ref.sh"
fail=0
for v in $tokenized_vocabs; do
  f="$ref/llama.cpp/models/ggml-vocab-$v.gguf"
  "$bin" "$f" "$f.inp" "$f.out" || fail=1
done
exit $fail
