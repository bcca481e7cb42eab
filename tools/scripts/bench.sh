#!/usr/bin/env bash
# One command to re-measure tgc's speed: builds tgc, tgc-bench and bench-ceilings, then runs
# tgc-bench with the given options (tgc-bench --help). For docs/performance.md:
#   tools/scripts/bench.sh --threads 1 --markdown docs/performance.md
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${TGC_BUILD_DIR:-$root/build}"
[ -f "$build/build.ninja" ] || [ -f "$build/Makefile" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target tgc-bench >&2
if [ ! -d "$root/tools/ort/node_modules/onnxruntime-node" ]; then
  (cd "$root/tools/ort" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --silent)
fi
cd "$root"
TGC_BENCH_VIA=tools/scripts/bench.sh exec "$build/tgc-bench" "$@"
