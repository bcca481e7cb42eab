# Shared by the --beam integration tests (sourced): reading the summary line and reporting checks.
# The caller sets `fail=0` and exits with $fail.

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
