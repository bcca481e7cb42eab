# Sourced by the GGUF tests: $ref is the reference setup (tools/gguf-ref/setup.sh: llama.cpp's
# tools and gguf-py), or the test exits 77 (skipped) saying how to get it.
ref="${TGC_GGUF_REF:-$root/.gguf-ref}"
if [ ! -x "$ref/llama_logits" ] || [ ! -d "$ref/llama.cpp/gguf-py" ]; then
  echo "SKIP: no GGUF reference tools in $ref (run tools/scripts/install-deps.sh, or tools/gguf-ref/setup.sh $ref)"
  exit 77
fi
export PYTHONPATH="$ref/llama.cpp/gguf-py${PYTHONPATH:+:$PYTHONPATH}"
# The vocabularies in the reference tree with test vectors (.inp/.out) whose tokenizer tgc implements.
tokenized_vocabs="llama-spm phi-3 gpt-2 llama-bpe qwen2 qwen35 starcoder refact command-r mpt falcon deepseek-llm deepseek-coder"
# build_ref_tool NAME OUT: builds tools/gguf-ref/NAME.cpp against llama.cpp's headers and the
# reference's prebuilt libraries into OUT; on failure says so and exits 1.
build_ref_tool() {
  g++ -O1 -std=c++17 "$root/tools/gguf-ref/$1.cpp" -I"$ref/llama.cpp/include" -I"$ref/llama.cpp/ggml/include" \
    -L"$ref/bins" -l:libllama.v0.5.0.so -l:libggml.v0.5.0.so -l:libggml-base.so -Wl,-rpath,"$ref/bins" -o "$2" \
    2>"$2.err" || { echo "FAIL building $1: $(cat "$2.err")"; exit 1; }
}
# expect_compile_error FILE PATTERN WHAT: `tgc compile FILE` fails in one line matching PATTERN
# (the caller's $tgc, $work and fail).
expect_compile_error() {
  if "$tgc" compile "$1" -o "$work/never" >/dev/null 2>"$work/err"; then
    echo "FAIL $3 compiled"; fail=1
  elif [ "$(wc -l <"$work/err")" != 1 ] || ! grep -q "$2" "$work/err"; then
    echo "FAIL $3 error: $(cat "$work/err")"; fail=1
  else
    echo "ok   $3: $(cat "$work/err")"
  fi
}
