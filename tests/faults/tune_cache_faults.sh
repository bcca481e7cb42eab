#!/usr/bin/env bash
# tgc compile --beam with a tuning cache that is corrupt, not a database, or locked by another
# process: a one-line warning, the search runs without the cache, the artifact is right.
# usage: tune_cache_faults.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"
source "$root/tests/integration/beam_lib.sh"

beam_without_cache() {  # description, cache file
  local what="$1" cache="$2" log="$work/log.$RANDOM"
  if ! "$tgc" compile "$work/mlp.onnx" -o "$work/m" --beam=1 --tune-cache="$cache" 2>"$log"; then
    echo "FAIL $what: compile failed"; cat "$log"; fail=1; return
  fi
  check "$what: one warning naming the cache" [ "$(grep -c "^tgc: warning: tuning cache $cache: .*; tuning without the cache$" "$log")" = 1 ]
  check "$what: searched all kernels" [ "$(summary "$log" searched)" = "$(summary "$log" distinct)" ]
  matches "$work/m"
}

echo "== not a database"
head -c 20000 /dev/urandom >"$work/random.sqlite"
beam_without_cache "random bytes" "$work/random.sqlite"
echo "== a cache whose pages are damaged"
"$tgc" compile "$work/mlp.onnx" -o "$work/m0" --beam=1 --tune-cache="$work/good.sqlite" 2>/dev/null
/usr/bin/python3 - "$work/good.sqlite" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
for i in range(100, len(b), 7): b[i] ^= 0x5a   # the header survives, the b-tree pages do not
open(sys.argv[1], 'wb').write(b)
PY
beam_without_cache "damaged pages" "$work/good.sqlite"
echo "== a folder in the cache's place"
mkdir -p "$work/dir.sqlite"
beam_without_cache "a folder" "$work/dir.sqlite"
echo "== locked by another process (an exclusive transaction held past the 10 s busy timeout)"
"$tgc" compile "$work/mlp.onnx" -o "$work/m1" --beam=1 --tune-cache="$work/locked.sqlite" 2>/dev/null
/usr/bin/python3 -c "
import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True); time.sleep(40)" "$work/locked.sqlite" >"$work/lock.out" &
locker=$!
for _ in $(seq 50); do grep -q locked "$work/lock.out" 2>/dev/null && break; sleep 0.1; done
beam_without_cache "locked" "$work/locked.sqlite"
kill "$locker" 2>/dev/null || true
exit $fail
