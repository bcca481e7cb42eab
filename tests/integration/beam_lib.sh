# Shared by the --beam integration tests, sourced once `tgc` and `root` are set: a scratch
# directory $work (removed at exit) with the MLP and its interpreter outputs, the summary line,
# and the checks both tests make. The caller exits with $fail.
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/tests/integration/make_mlp.py" "$work"
"$tgc" eval "$work/mlp.onnx" -i x="$work/x.npy" -o "$work/want"
fail=0

# summary LOG FIELD: a number from the summary line
#   beam: K kernels (D distinct): S searched, H from the cache; C candidates timed, X dropped; ...
summary() {
  local line; line=$(grep -E '^beam: [0-9]+ kernels' "$1" | tail -1)
  [ -n "$line" ] || { echo "FAIL no summary line in $1" >&2; echo -1; return; }
  case "$2" in
    distinct) sed -E 's/.*\(([0-9]+) distinct\).*/\1/' <<< "$line" ;;
    searched) sed -E 's/.*: ([0-9]+) searched.*/\1/' <<< "$line" ;;
    hits) sed -E 's/.* ([0-9]+) from the cache.*/\1/' <<< "$line" ;;
    candidates) sed -E 's/.* ([0-9]+) candidates timed.*/\1/' <<< "$line" ;;
    dropped) sed -E 's/.* ([0-9]+) dropped.*/\1/' <<< "$line" ;;
  esac
}
check() {  # description condition...
  local what="$1"; shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; fail=1; fi
}

# searched_all LOG: a first compile searched every distinct kernel (sets $distinct), timed more
# candidates than that, showed progress, and no candidate computed a different output.
searched_all() {
  distinct=$(summary "$1" distinct)
  check "searched all $distinct distinct kernels" [ "$(summary "$1" searched)" = "$distinct" ]
  check "timed candidates" [ "$(summary "$1" candidates)" -gt "$distinct" ]
  check "progress lines per kernel" grep -qE '^beam: kernel 1/[0-9]+ .*: [0-9]+ candidates, best ' "$1"
  check "no candidate computed a different output" bash -c "! grep -q WRONG '$1'"
}

# all_from_cache LOG: a second compile searched and timed nothing, every kernel came from the cache.
all_from_cache() {
  check "searched nothing" [ "$(summary "$1" searched)" = 0 ]
  check "timed nothing" [ "$(summary "$1" candidates)" = 0 ]
  check "all $distinct kernels from the cache" [ "$(summary "$1" hits)" = "$distinct" ]
}

# matches ARTIFACT [RUNNER...]: the artifact's output equals the interpreter's.
matches() {
  local artifact="$1"; shift
  "$@" "$artifact" -i x="$work/x.npy" -o "$artifact.out"
  /usr/bin/python3 "$root/tests/integration/compare_npy.py" "$artifact.out" "$work/want" --rtol 1e-4 --atol 1e-6 || fail=1
}
