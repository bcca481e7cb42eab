#!/usr/bin/env bash
# Every GGUF block type tgc reads, dequantized by tgc's in-kernel expressions (reference
# interpreter and a compiled cpu artifact), equals gguf-py's dequantize bit for bit.
# usage: gguf_dequant.sh GGUF_DEQUANT_BINARY REPO_ROOT RUNTIME_DIR
set -euo pipefail
bin="$1"; root="$2"; runtime="$3"
source "$root/tests/integration/gguf/gguf_ref.sh"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/tests/integration/gguf/gguf_dequant_check.py" make "$work/blocks.gguf"
"$bin" "$work/blocks.gguf" "$work/out" "$runtime"
/usr/bin/python3 "$root/tests/integration/gguf/gguf_dequant_check.py" check "$work/blocks.gguf" "$work/out"
