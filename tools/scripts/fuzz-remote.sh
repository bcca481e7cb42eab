#!/usr/bin/env bash
# A fuzz campaign on another (many-core) x86-64 Linux machine, in libFuzzer's fork mode
# (docs/robustness.md, campaigns 5-8: the lent GPU machine's 64 cores).
#
#   tools/scripts/fuzz-remote.sh pack DIR     here: DIR gets the onnx and gguf fuzzers of build-fuzz
#                                             (stripped of debug info, xz), the protobuf library they
#                                             need, build-fuzz's corpus, and this script
#   DIR/fuzz-remote.sh run DIR SECONDS ONNX_FORKS GGUF_FORKS OUT
#                                             there: both harnesses side by side, then OUT/result.tar.xz
#                                             holds the grown corpus, crash inputs and logs
#
# Back here: untar the result, copy fuzz-corpus/* over build-fuzz/fuzz-corpus/ and each
# art/<harness>/ input to tests/fuzz/regressions/<harness>/ (then fix the bug it shows). The
# executions are the last `#N:` line of each log.
set -euo pipefail
mode="${1:-}"
case "$mode" in
  pack)
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)" dir="$2"
    cmake --build "$root/build-fuzz" --target fuzz_onnx fuzz_gguf >/dev/null
    mkdir -p "$dir" && rm -f "$dir"/*.xz
    for h in onnx gguf; do strip --strip-debug -o "$dir/fuzz_$h" "$root/build-fuzz/tests/fuzz/fuzz_$h"; done
    cp -L "$(ldd "$root/build-fuzz/tests/fuzz/fuzz_onnx" | awk '/libprotobuf-lite/ {print $3}')" "$dir/libprotobuf-lite.so.32"
    tar -C "$root/build-fuzz" -cf "$dir/corpus.tar" fuzz-corpus/onnx fuzz-corpus/gguf
    xz -T0 -6 "$dir"/fuzz_onnx "$dir"/fuzz_gguf "$dir"/libprotobuf-lite.so.32 "$dir"/corpus.tar
    cp "${BASH_SOURCE[0]}" "$dir/"
    ls -la "$dir" ;;
  run)
    here="$(realpath "$2")" secs="$3" forks_onnx="$4" forks_gguf="$5" out="$(realpath -m "$6")"
    w="$(mktemp -d)"
    for f in fuzz_onnx fuzz_gguf libprotobuf-lite.so.32; do xz -dc "$here/$f.xz" >"$w/$f"; done
    chmod +x "$w/fuzz_onnx" "$w/fuzz_gguf"
    xz -dc "$here/corpus.tar.xz" | tar -x -C "$w"
    echo "$(nproc) cores: $(lscpu | sed -n 's/^Model name: *//p')"
    export LD_LIBRARY_PATH="$w" ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 UBSAN_OPTIONS=print_stacktrace=1
    for h in onnx gguf; do
      n=$forks_onnx; [ $h = gguf ] && n=$forks_gguf
      [ "$n" -gt 0 ] || continue
      mkdir -p "$w/art/$h"
      # fuzz.sh's limits; fork mode goes on past crashes, keeping each input in art/.
      (cd "$w" && timeout $((secs + 60)) ./fuzz_$h -fork="$n" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
        -max_total_time="$secs" -timeout=20 -rss_limit_mb=2560 -malloc_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$w/art/$h/" fuzz-corpus/$h >"$h.log" 2>&1) &
    done
    wait || true
    for h in onnx gguf; do
      [ -f "$w/$h.log" ] || continue
      echo "== $h: $(grep -E '^#[0-9]+: ' "$w/$h.log" | tail -1)"
      ls "$w/art/$h" | sed 's/^/  /'
    done
    mkdir -p "$out"
    (cd "$w" && tar -cJf "$out/result.tar.xz" fuzz-corpus art ./*.log) ;;
  *) sed -n '2,13p' "$0"; exit 1 ;;
esac
