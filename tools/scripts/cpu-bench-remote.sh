#!/usr/bin/env bash
# tgc beside onnxruntime on another machine's CPU, such as the lent GPU machine's Intel host, which
# has Python's onnxruntime but no Node: tgc and tgc-bench come from tools/scripts/pack-tgc.sh, the
# peer is tools/ort/ort_run.py. Each model runs in a tgc-bench of its own pinned (taskset) to two
# CPUs on distinct cores, PAR models at once on disjoint pairs; the zoo is generated there by
# tools/bench/zoo_models.py (python3 with onnx and numpy).
#
#   tools/scripts/cpu-bench-remote.sh PACK.tar.xz OUT_DIR [MODEL_DIR...]
#
# MODEL_DIR: more models (*.onnx) beside the zoo. Env: PAR (default 4), ONLY (a grep -E pattern
# over the model paths), ZOO=0 (no zoo), BUDGET (tgc-bench --budget, default 0.5). Writes
# OUT_DIR/results.txt (every tgc-bench report) and OUT_DIR/table.md (one row per model: tgc and
# onnxruntime ms, tgc/ort at 1 and 2 threads, tgc's 2-thread time over its 1-thread time).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ $# -ge 2 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
pack="$(realpath "$1")" out="$(realpath -m "$2")"
shift 2
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/tgc" "$work/reports"
tar xJf "$pack" -C "$work/tgc"
list="$work/models.txt"
: > "$list"
for d in "$@"; do ls "$d"/*.onnx >> "$list"; done
if [ "${ZOO:-1}" = 1 ]; then
  python3 "$root/tools/bench/zoo_models.py" "$work/zoo" > "$work/zoo.log"
  ls -S "$work"/zoo/*.onnx >> "$list"  # largest first: the long runs start early
fi
[ -z "${ONLY:-}" ] || { grep -E "$ONLY" "$list" > "$list.only" || true; mv "$list.only" "$list"; }
# Two CPUs of distinct cores per slot (the first CPU of each core, in pairs).
python3 - > "$work/pairs" <<'PY'
import glob
first = {}
for c in sorted(glob.glob('/sys/devices/system/cpu/cpu[0-9]*'), key=lambda p: int(p.rsplit('cpu', 1)[1])):
    try:
        key = tuple(open(f'{c}/topology/{f}').read().strip() for f in ('physical_package_id', 'core_id'))
    except OSError:
        continue
    first.setdefault(key, c.rsplit('cpu', 1)[1])
cpus = list(first.values())
for i in range(0, len(cpus) - 1, 2):
    print(f'{cpus[i]},{cpus[i + 1]}')
PY
par="${PAR:-4}"
[ "$(wc -l < "$work/pairs")" -ge "$par" ] || { echo "fewer than $par pairs of cores" >&2; exit 1; }
export root work
export budget="${BUDGET:-0.5}"
xargs -a "$list" -P "$par" --process-slot-var=SLOT -I{} bash -c '
  m={}; n=$(basename "$m" .onnx); pair=$(sed -n "$((SLOT + 1))p" "$work/pairs")
  taskset -c "$pair" "$work/tgc/tgc-bench" --models-only --threads 1,2 --models-dir "$(dirname "$m")" \
    --filter "^$n\$" --work "$work/w/$n" --tgc "$work/tgc/tgc" --ort "$root/tools/ort/ort_run.py" \
    --ceilings /bin/true --timeout 600 --budget "$budget" > "$work/reports/$n.txt" 2>&1 || true'
cat "$work"/reports/*.txt > "$out/results.txt"
{
  echo "| model | tgc ms 1T | ort ms 1T | tgc/ort 1T | tgc ms 2T | ort ms 2T | tgc/ort 2T | tgc 2T/1T | outputs |"
  echo "|---|---|---|---|---|---|---|---|---|"
  # tgc-bench's table rows: case inputs threads tgc_ms ort_ms ratio ... outputs ...
  awk '$3 ~ /^[12]$/ && $4 ~ /^[0-9.]+$/ && $5 ~ /^[0-9.]+$/ {
         ok = ($0 ~ / ok /) ? "ok" : ($0 ~ /WRONG/ ? "WRONG" : "?")
         if ($3 == 1) { t1[$1] = $4; o1[$1] = $5; r1[$1] = $6 } else { t2[$1] = $4; o2[$1] = $5; r2[$1] = $6 }
         st[$1] = (st[$1] == "" || st[$1] == "ok") ? ok : st[$1]
       }
       END { for (m in t1) printf "| %s | %s | %s | %s | %s | %s | %s | %.2f | %s |\n", m, t1[m], o1[m], r1[m], t2[m], o2[m], r2[m], (t1[m] > 0 ? t2[m] / t1[m] : 0), st[m] }' \
    "$out/results.txt" | sort
} > "$out/table.md"
cat "$out/table.md"
