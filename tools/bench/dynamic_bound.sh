#!/usr/bin/env bash
# A run-time dim's cost at its bound (issue 19): each model compiled twice for cpu, once with the
# dim fixed at the bound (--input-shape) and once as a run-time dim up to that bound (--dynamic),
# then both run on the same input at the bound, alternately for ROUNDS rounds of `--bench ITERS`
# each (so load from other processes hits both alike). Prints per model the medians of the
# rounds' median latencies and their ratio, dynamic / static (the goal is <= 1.2).
# usage: tools/bench/dynamic_bound.sh [--rounds N] [--iters N] [--threads N]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
tgc="$root/build/tgc"; models="$root/../shared/models/real"; rounds=5; iters=20; threads=1
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "dynamic_bound.sh: unknown option '$1' (--help)" >&2; exit 2 ;;
  esac
done
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# name|model|input|static shape|dynamic shape|--dynamic values (space-separated)|input shape at the bound|
#   flags for both compiles|flags for the static compile alone|other inputs (NAME=SHAPE zeros, NAME=i64:V a scalar)
# Silero VAD v5's dynamic compile keeps its sample rate an input too (an If on it, the branch
# taken at run time); the static one fixes it at 16000.
cases=(
  "rec|ch_PP-OCRv4_rec_infer.onnx|x|1,3,48,320|1,3,48,?|p2o.DynamicDimension.1=320|1,3,48,320|||"
  "cls|ch_ppocr_mobile_v2.0_cls_infer.onnx|x|1,3,48,192|1,3,48,?|p2o.DynamicDimension.2=192|1,3,48,192|||"
  "det|ch_PP-OCRv4_det_infer.onnx|x|1,3,320,320|1,3,?,?|p2o.DynamicDimension.1=320/32 p2o.DynamicDimension.2=320/32|1,3,320,320|||"
  "mel|melspectrogram.onnx|input|1,16000|1,?|samples=16000|1,16000|||"
  "vad4|silero_vad_legacy.onnx|input|1,512|1,?|sequence=512|1,512|--input-shape h=2,1,64 --input-shape c=2,1,64 --input-value sr=16000||h=2,1,64 c=2,1,64"
  "vad5|silero_vad_v5.onnx|input|1,512|1,?|input:1=512|1,512|--input-shape state=2,1,128|--input-value sr=16000|state=2,1,128 sr=i64:16000"
)
median() { sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
printf "%-5s %12s %12s %8s\n" model "static ms" "dynamic ms" ratio
for c in "${cases[@]}"; do
  IFS='|' read -r name model input fixed dyn var shape both static_only others <<<"$c"
  /usr/bin/python3 -c "import numpy as np, sys; np.save(sys.argv[1], np.random.default_rng(0).standard_normal(tuple(int(d) for d in sys.argv[2].split(','))).astype(np.float32))" \
    "$work/$name.npy" "$shape"
  ins=(); sins=()
  for o in $others; do
    n="${o%%=*}" v="${o#*=}"
    /usr/bin/python3 -c "import numpy as np, sys; v = sys.argv[2]
np.save(sys.argv[1], np.array(int(v[4:]), np.int64) if v.startswith('i64:') else np.zeros(tuple(int(d) for d in v.split(',')), np.float32))" \
      "$work/$name.$n.npy" "$v"
    ins+=(-i "$n=$work/$name.$n.npy")
    case "$static_only" in *"--input-value $n="*) ;; *) sins+=(-i "$n=$work/$name.$n.npy") ;; esac
  done
  # shellcheck disable=SC2086  # the flags split on spaces
  "$tgc" compile "$models/$model" --input-shape "$input=$fixed" $both $static_only -o "$work/$name.static" 2>/dev/null
  dynamic=(); for v in $var; do dynamic+=(--dynamic "$v"); done
  # shellcheck disable=SC2086
  "$tgc" compile "$models/$model" --input-shape "$input=$dyn" "${dynamic[@]}" $both -o "$work/$name.dynamic" 2>/dev/null
  : >"$work/s"; : >"$work/d"
  for _ in $(seq "$rounds"); do
    for kind in static dynamic; do
      if [ $kind = static ]; then extra=("${sins[@]}"); else extra=("${ins[@]}"); fi
      "$work/$name.$kind" -i "$input=$work/$name.npy" "${extra[@]}" --bench "$iters" --threads "$threads" | tail -1 |
        sed 's/.*"median_ms": \([0-9.]*\).*/\1/' >>"$work/${kind:0:1}"
    done
  done
  s=$(median <"$work/s"); d=$(median <"$work/d")
  printf "%-5s %12.2f %12.2f %8.2f\n" "$name" "$s" "$d" "$(awk -v a="$d" -v b="$s" 'BEGIN {print a / b}')"
done
