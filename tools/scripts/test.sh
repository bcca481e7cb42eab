#!/usr/bin/env bash
# Builds everything and runs the whole test suite (unit, integration, runtime).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
"$root/tools/scripts/install-deps.sh"
cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$root/build"
(cd "$root/build" && ctest --output-on-failure -j2 "$@")
# The whole suite (no ctest arguments, as CI runs it) also runs the sanitizer builds: ASan+UBSan
# unit tests and an integration slice, TSan on the runtime's thread pool, 20 s of fuzzing per
# harness (docs/robustness.md; about 20 minutes on 2 cores, most of it the ASan build).
# TGC_SKIP_SANITIZE=1 leaves them out.
if [ $# -eq 0 ] && [ "${TGC_SKIP_SANITIZE:-0}" != 1 ]; then
  FUZZ_SECONDS=20 "$root/tools/scripts/sanitize.sh" ci
fi
