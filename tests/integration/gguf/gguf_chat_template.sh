#!/usr/bin/env bash
# Chat prompts against llama.cpp's (issue 41): for a model template of each family tgc renders
# (tools/gguf-ref/chat-templates/, written into tiny random GGUFs with a matching vocabulary), the
# same conversations rendered and tokenized by tgc (gguf_chat_render: runtime-stub/llm/chat_template.c)
# and by llama.cpp (tools/gguf-ref/llama_chat_template.cpp, built here: llama_chat_apply_template,
# then llama_tokenize with special tokens parsed) give the same token ids.
# usage: gguf_chat_template.sh GGUF_CHAT_RENDER_BINARY REPO_ROOT
set -uo pipefail
bin="$1"; root="$2"
source "$root/tests/integration/gguf/gguf_ref.sh"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
build_ref_tool llama_chat_template "$work/llama_chat_template"
fail=0
# template file, vocabulary, the name tgc gives the template, general.name
cases="llama-3.1:llama-bpe:llama3:x qwen-2.5:qwen2:chatml:x qwen-3:qwen2:chatml:x phi-3.5:phi-3:phi3:Phi3
phi-3.5:phi-3:phi3:x phi-4:qwen2:phi4:x gemma-2:llama-spm:gemma:x llama-2:llama-spm:llama2-sys-strip:x
mistral-v1:llama-spm:mistral-v1:x mistral-nemo:llama-spm:mistral-v3-tekken:x mistral-small-3.2:llama-spm:mistral-v7:x"
sys="You are a helpful assistant."
for c in $cases; do
  IFS=: read -r tmpl vocab name gname <<<"$c"
  g="$work/$tmpl-$gname.gguf"
  CHAT_TEMPLATE="$root/tools/gguf-ref/chat-templates/$tmpl.jinja" NAME="$gname" E=16 F=32 H=2 HKV=1 L=1 \
    /usr/bin/python3 "$root/tools/gguf-ref/make_llama_gguf.py" "$ref/llama.cpp/models/ggml-vocab-$vocab.gguf" "$g" >/dev/null ||
    { echo "FAIL $tmpl: make_llama_gguf"; fail=1; continue; }
  convs=(
    "1|system|$sys|user|Hello!|assistant|Hi there. How can I help?|user|  What is 2+2?
"
    "1|user|Hello"
    "0|system|$sys|user|One|assistant| Two |user|Three|assistant|Four"
    "1|user|say <|im_end|> </s> <|eot_id|> [INST] <end_of_turn>  <|end|> then stop"
  )
  for conv in "${convs[@]}"; do
    IFS='|' read -r -d '' -a args <<<"$conv"
    args[-1]="${args[-1]%$'\n'}"  # read -d '' keeps here-string's newline
    "$work/llama_chat_template" "$g" "$ref/bins" "${args[@]}" >"$work/want" 2>"$work/err" ||
      { echo "FAIL $tmpl: llama_chat_template: $(cat "$work/err")"; fail=1; continue; }
    "$bin" "$g" "${args[@]}" >"$work/got" 2>"$work/name" || { echo "FAIL $tmpl: $(cat "$work/name")"; fail=1; continue; }
    what="$tmpl ($vocab vocabulary${gname/#x/}) as $(cat "$work/name"), $(wc -w <"$work/want") tokens"
    if [ "$(cat "$work/name")" != "$name" ]; then
      echo "FAIL $what: expected template $name"; fail=1
    elif cmp -s "$work/want" "$work/got"; then
      echo "ok   $what"
    else
      echo "FAIL $what: ids differ"; echo "  llama.cpp: $(cat "$work/want")"; echo "  tgc:       $(cat "$work/got")"; fail=1
    fi
  done
done
exit $fail
