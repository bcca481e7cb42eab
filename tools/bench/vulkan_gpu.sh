#!/usr/bin/env bash
# GPU figures for docs/performance-gpu.md (issue 13): the vulkan target on a Vulkan device
# (TGC_VK_DEVICE picks one). Per real model, at the reference shapes of
# tests/integration/real_models_vs_ort.sh: the median latency of a run (`--bench`: one submit and one wait,
# inputs written and outputs read included), the GPU time of its dispatches (TGC_PROFILE
# timestamps, one barrier per dispatch while profiling), kernels, pipelines and the barriers of the
# normal recording. Then a 16M-element f32 add's bandwidth as a fraction of a 16M-element copy's
# (one dispatch each, timed by timestamps). Prints a markdown section (or writes --markdown FILE).
# Two phases, so the GPU machine needs only bash, awk, the artifacts and a Vulkan loader:
#   vulkan_gpu.sh --build DIR [--tgc PATH] [--models DIR] [--beam N]   compile into DIR (needs python3-onnx)
#   vulkan_gpu.sh --run DIR [--iters N] [--filter REGEX] [--markdown FILE]   measure DIR's artifacts
# Without --build/--run: both, in a temporary directory.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tgc="$root/build/tgc"; models="$root/../shared/models/real"; iters=200; filter=""; beam=""; markdown=""
build=""; run=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --run) run="$2"; shift 2 ;;
    --tgc) tgc="$2"; shift 2 ;;
    --models) models="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --filter) filter="$2"; shift 2 ;;
    --beam) beam="--beam=$2"; shift 2 ;;
    --markdown) markdown="$2"; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "vulkan_gpu.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
  esac
done
if [ -z "$build" ] && [ -z "$run" ]; then
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  build="$tmp"; run="$tmp"
fi
# shellcheck source=tests/integration/real_models_lib.sh
. "$root/tests/integration/real_models_lib.sh"  # the cases and shapes of tests/integration/real_models_vs_ort.sh
cases="$(real_model_cases | cut -d'|' -f1)"
fail=0

if [ -n "$build" ]; then
  mkdir -p "$build"
  # The two models are written once (a GPU machine without python3-onnx gets them carried in DIR).
  [ -f "$build/add.onnx" ] && [ -f "$build/copy.onnx" ] || /usr/bin/python3 - "$build" <<'PY'
import sys, onnx
from onnx import helper, TensorProto as T
d, n = sys.argv[1], 1 << 24
v = lambda name: helper.make_tensor_value_info(name, T.FLOAT, [n])
for name, nodes, ins in (("add", [helper.make_node("Add", ["x", "y"], ["z"])], ["x", "y"]),
                         ("copy", [helper.make_node("Identity", ["x"], ["z"])], ["x"])):
    onnx.save(helper.make_model(helper.make_graph(nodes, name, [v(i) for i in ins], [v("z")]),
                                opset_imports=[helper.make_opsetid("", 13)]), f"{d}/{name}.onnx")
PY
  compile() {  # NAME MODEL ARGS...: DIR/NAME and DIR/NAME.log (the compile report: kernel count)
    local name="$1" model="$2"; shift 2
    "$tgc" compile "$model" --target=vulkan $beam "$@" -o "$build/$name" 2> "$build/$name.log" ||
      { echo "vulkan_gpu.sh: compiling $name failed: $(tail -1 "$build/$name.log")" >&2; fail=1; }
  }
  # shellcheck disable=SC2086
  while IFS='|' read -r name model cargs _; do compile "$name" "$models/$model" $cargs; done < <(real_model_cases)
  compile add "$build/add.onnx"
  compile copy "$build/copy.onnx"
  echo "vulkan_gpu.sh: artifacts in $build" >&2
fi

[ -n "$run" ] || exit $fail
export TGC_VK_CACHE="$run/vkcache"
out="$run/report.md"
first() { sed -n "s/$1/\1/p" | head -1; }  # the first capture of a sed regex on stdin
prof=$((iters < 20 ? iters : 20))  # profiled runs (each dispatch behind a barrier)
gpu_ms() { TGC_PROFILE=1 "$run/$1" --bench "$prof" 2>&1 >/dev/null | first '^tgc profile: .* runs, \([0-9.]*\) ms per run.*'; }
device="$(TGC_VERBOSE=1 "$run/hello_deepa" 2>&1 >/dev/null | first "^tgc: vulkan: device '\(.*\)', .*")"
{
  echo "Measured with \`tools/bench/vulkan_gpu.sh --iters $iters\` on **${device:-?}**$(grep -q -- --beam "$run/det.log" 2>/dev/null && echo ', kernels tuned with --beam')."
  echo
  echo "| model | latency ms (median, one submit) | GPU ms (sum of dispatches) | kernels | pipelines | barriers |"
  echo "|---|---|---|---|---|---|"
} > "$out"
for name in $cases; do
  [ -z "$filter" ] || [[ "$name" =~ $filter ]] || continue
  [ -x "$run/$name" ] || { echo "| $name | not compiled |" >> "$out"; fail=1; continue; }
  if ! bench="$("$run/$name" --bench "$iters" 2>"$run/$name.err" | tail -1)"; then
    echo "| $name | run failed: $(tail -1 "$run/$name.err") |" >> "$out"; fail=1; continue
  fi
  verbose="$(TGC_VERBOSE=1 "$run/$name" 2>&1 >/dev/null)"
  echo "| $name | $(first '.*"median_ms": *\([0-9.e-]*\).*' <<< "$bench") | $(gpu_ms "$name")" \
       "| $(first '.*: \([0-9]*\) kernels.*' < "$run/$name.log") | $(first '.*: \([0-9]*\) pipelines made.*' <<< "$verbose")" \
       "| $(first '.*with \([0-9]*\) barriers.*' <<< "$verbose") |" >> "$out"
done
add_ms="$(gpu_ms add)"; copy_ms="$(gpu_ms copy)"
awk -v add="${add_ms:-0}" -v copy="${copy_ms:-0}" 'BEGIN {
  mb = 16777216 * 4
  a = add > 0 ? 3 * mb / (add * 1e-3) / 1e9 : 0; c = copy > 0 ? 2 * mb / (copy * 1e-3) / 1e9 : 0
  printf "\n| 16M f32 | GPU ms | GB/s |\n|---|---|---|\n"
  printf "| copy (read + write) | %.4f | %.1f |\n| add (2 reads + write) | %.4f | %.1f |\n\n", copy, c, add, a
  if (c > 0) printf "The add reaches %.0f%% of the copy'"'"'s bandwidth.\n", 100 * a / c
  else print "No bandwidth figures (no timestamps on this device?)."
}' >> "$out"
if [ -n "$markdown" ]; then cp "$out" "$markdown"; echo "wrote $markdown" >&2; else cat "$out"; fi
exit $fail
