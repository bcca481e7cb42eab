#!/usr/bin/env bash
# Vulkan runtime faults (docs/robustness.md): the vulkan artifact of the digits CNN runs through a
# stand-in libvulkan.so.1 (tests/faults/fake_vulkan.c) over the real loader and driver (lavapipe
# here), which refuses the instance, finds no device, fails the device, runs out of device memory
# at each allocation in turn, fails the pipelines, or loses the device at submit. Each must end in
# exit status 1 with one line on stderr naming the failure, never a crash; with no fault the
# artifact runs. Skipped (77) without a Vulkan device.
# usage: vulkan_faults.sh TGC_BINARY REPO_ROOT FAKE_LIBVULKAN_SO
set -uo pipefail
tgc="$1"; root="$2"; fake="$3"
"$root/tests/integration/vulkan_device.sh" "$tgc" "$root" || exit $?
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
fail=0
loader="$(/sbin/ldconfig -p | awk '/libvulkan\.so\.1 .*x86-64/ {print $NF; exit}')"
[ -n "$loader" ] || { echo "FAIL no libvulkan.so.1 in ldconfig's cache, though a Vulkan device ran"; exit 1; }
mkdir -p "$work/vk"
cp "$fake" "$work/vk/libvulkan.so.1"
export XDG_CACHE_HOME="$work/cache"  # the pipeline cache stays here
image="$root/models/digits_samples/image_0.npy"
"$tgc" compile "$root/models/digits_cnn.onnx" --target=vulkan -o "$work/digits" >/dev/null 2>"$work/err" ||
  { echo "FAIL compile: $(cat "$work/err")"; exit 1; }

# run FAULT: sets rc and lines.
run() {
  TGC_FAKE_VK_FAIL="$1" TGC_FAKE_VK_LOADER="$loader" LD_LIBRARY_PATH="$work/vk" "$work/digits" -i image="$image" -o "$work/out" >/dev/null 2>"$work/err"
  rc=$?
  lines=$(wc -l < "$work/err")
}

# expect FAULT STATUS TEXT: the run's exit status and a one-line error containing TEXT.
expect() {
  run "$1"
  if [ "$rc" != "$2" ] || { [ "$2" = 1 ] && { [ "$lines" != 1 ] || ! grep -qF -- "$3" "$work/err"; }; }; then
    echo "FAIL ${1:-no fault}: exit $rc (want $2), stderr: $(head -c 400 "$work/err")"; fail=1
  else
    echo "ok   ${1:-no fault}: exit $rc${3:+, $(head -c 200 "$work/err")}"
  fi
}

expect "" 0 ""
expect noinstance 1 "no Vulkan device found (no Vulkan 1.1 driver"
expect nodevice 1 "no Vulkan device found"
expect device 1 "vkCreateDevice on"
# Every vkAllocateMemory of a create in turn, until the run needs no more (lavapipe: one block
# holds every buffer; a discrete GPU's staging memory adds more).
refused=0
for n in $(seq 1 100); do
  run "alloc:$n"
  [ "$rc" = 0 ] && break
  if [ "$rc" != 1 ] || [ "$lines" != 1 ] || ! grep -qF "VK_ERROR_OUT_OF_DEVICE_MEMORY" "$work/err"; then
    echo "FAIL alloc:$n: exit $rc, stderr: $(head -c 400 "$work/err")"; fail=1; break
  fi
  refused=$n; said="$(cat "$work/err")"
done
if [ "$refused" -lt 1 ] || [ "$rc" != 0 ]; then
  echo "FAIL alloc: $refused allocations refused, then exit $rc"; fail=1
else
  echo "ok   alloc:1..$refused: one line each, the last: $said; alloc:$n runs"
fi
expect pipeline 1 "creating the pipeline of kernel"
expect lost 1 "VK_ERROR_DEVICE_LOST"
exit $fail
