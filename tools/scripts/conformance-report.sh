#!/usr/bin/env bash
# Runs every ONNX backend test case (Debian's libonnx-testdata) on every target, then rewrites
# docs/onnx-conformance.md and the pass lists the CTest conformance tests check
# (tests/conformance/onnx_{interp,cpu,qcom,cpu_aarch64}_pass.txt). Run it after adding ops; commit the results.
# usage: tools/scripts/conformance-report.sh [BUILD_DIR]     (JOBS=N cases at once, default nproc;
#        TARGETS="interp cpu qcom cpu_aarch64" by default: qcom on pocl takes about 17 minutes;
#        add vulkan for tests/conformance/onnx_vulkan_pass.txt: lavapipe with the validation layer, about 9 minutes at JOBS=2)
# The per-target results stay in BUILD_DIR/conformance/*.tsv.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
build="${1:-build}"
jobs="${JOBS:-$(nproc)}"
# What is measured: the commit, and whether the tree (outputs of this script aside) differs from it.
revision="commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!docs/onnx-conformance.md' ':!tests/conformance/onnx_*_pass.txt' || echo ' plus uncommitted changes'), JOBS=$jobs"
cmake --build "$build" --target tgc onnx-conformance >/dev/null
out="$build/conformance"
export POCL_KERNEL_CACHE=0  # pocl builds every kernel afresh: no stale kernel cache
export TGC_VK_VALIDATION=1 MESA_SHADER_CACHE_DIR="$root/$build/mesa-shader-cache"
mkdir -p "$out"

run() {  # name, label, runner options...
  local name="$1" label="$2"; shift 2
  local list="tests/conformance/onnx_${name}_pass.txt"
  echo "== $label"
  "$build/onnx-conformance" -j "$jobs" --label "$label" --results "$out/$name.tsv" --update "$out/$name.pass" "$@" | tail -n 6
  if [ -f "$list" ]; then  # what changed against the committed list
    local gained lost
    gained=$(comm -13 <(grep -v '^#' "$list" | sort) <(grep -v '^#' "$out/$name.pass" | sort) | wc -l)
    lost=$(comm -23 <(grep -v '^#' "$list" | sort) <(grep -v '^#' "$out/$name.pass" | sort))
    echo "   $gained newly passing; $(printf '%s' "$lost" | grep -c . || true) no longer passing${lost:+: $(echo $lost)}"
  fi
  cp "$out/$name.pass" "$list"
}

targets="${TARGETS:-interp cpu qcom cpu_aarch64}"
tsvs=()
for t in $targets; do
  case "$t" in
    interp) run interp "interp" ;;
    cpu) run cpu "cpu" --target cpu ;;
    qcom) run qcom "qcom (pocl)" --target qcom --triple x86_64-linux-gnu ;;
    vulkan) run vulkan "vulkan (lavapipe)" --target vulkan ;;
    cpu_aarch64) run cpu_aarch64 "cpu aarch64 (qemu)" --target cpu --triple aarch64-linux-gnu --emulator "qemu-aarch64 -L /usr/aarch64-linux-gnu" ;;
    *) echo "unknown target '$t' in TARGETS" >&2; exit 1 ;;
  esac
  tsvs+=("$out/$t.tsv")
done

"$build/onnx-conformance" report docs/onnx-conformance.md "${tsvs[@]}" \
  --generated-by "tools/scripts/conformance-report.sh" --revision "$revision"
echo "wrote docs/onnx-conformance.md and tests/conformance/onnx_{interp,cpu,qcom,cpu_aarch64}_pass.txt"
