#!/usr/bin/env bash
# Exits 0 when a Vulkan device runs a tgc artifact here, else 77 (ctest's skip code) saying why.
# usage: vulkan_device.sh TGC_BINARY REPO_ROOT
set -euo pipefail
tgc="$1"; root="$2"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
"$tgc" compile "$root/models/digits_cnn.onnx" --target=vulkan -o "$work/probe" 2>/dev/null
if ! "$work/probe" > /dev/null 2> "$work/err"; then
  if grep -qE "no Vulkan device|cannot load libvulkan" "$work/err"; then
    echo "SKIP: no Vulkan device here: $(cat "$work/err")"; exit 77
  fi
  cat "$work/err"; exit 1
fi
