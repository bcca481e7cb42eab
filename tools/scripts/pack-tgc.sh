#!/usr/bin/env bash
# Packs build/tgc, build/tgc-agent and the runtime objects with the shared libraries tgc needs beyond glibc (LLVM 19,
# protobuf, sqlite...) into one .tar.xz, so that tgc can compile, and tune with --beam through the
# tgc-agent beside it, on an x86-64 Linux machine that has no LLVM 19, such as the lent GPU
# machine (tools/scripts/gpu-check.sh compile); and build/tgc-bench where it is built
# (tools/scripts/cpu-bench-remote.sh). Unpacked:
#
#   mkdir tgc && tar xJf tgc.tar.xz -C tgc && tgc/tgc compile ...
#
# usage: tools/scripts/pack-tgc.sh OUT.tar.xz
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ $# -eq 1 ] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
out="$(realpath "$1")"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
cp "$root/build/tgc" "$root/build/tgc-agent" "$stage/bin/"
bins=(tgc tgc-agent)
[ ! -x "$root/build/tgc-bench" ] || { cp "$root/build/tgc-bench" "$stage/bin/"; bins+=(tgc-bench); }
for b in "${bins[@]}"; do strip "$stage/bin/$b"; done
cp -r "$root/build/runtime" "$stage/bin/"   # the runtime objects tgc links into artifacts
# Every library ldd resolves, except glibc's own (the other machine's glibc must be as new or newer).
for b in "${bins[@]}"; do ldd "$root/build/$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|ld-linux*) continue ;; esac
  cp -L "$lib" "$stage/lib/"
done
# tgc finds tgc-agent beside its own executable, so the wrapper sets the library path and execs
# the binary in bin/.
for b in "${bins[@]}"; do
  [ "$b" != tgc-agent ] || continue
  cat > "$stage/$b" <<SH
#!/bin/sh
here="\$(cd "\$(dirname "\$0")" && pwd)"
LD_LIBRARY_PATH="\$here/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$here/bin/$b" "\$@"
SH
  chmod +x "$stage/$b"
done
tar cf - -C "$stage" . | xz -T0 -6 > "$out"
echo "packed $out: $(du -h "$out" | cut -f1)"
