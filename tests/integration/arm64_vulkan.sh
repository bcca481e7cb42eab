# Sourced by tests: runs aarch64 Vulkan artifacts (--target=adreno) under qemu-aarch64 on arm64
# lavapipe from the private root that tools/scripts/arm64-vulkan-root.sh unpacks into
# $ROOT/.arm64-vk (install-deps.sh does), without the validation layer (no arm64 build here).
# Sets ARM64_VK_ROOT where that root and qemu-aarch64 are there, else leaves it empty.
ARM64_VK_ROOT=""
if command -v qemu-aarch64 >/dev/null &&
   [ -e "$root/.arm64-vk/root/usr/share/vulkan/icd.d/lvp_icd.aarch64.json" ]; then
  ARM64_VK_ROOT="$root/.arm64-vk/root"
fi

# run_arm64_vulkan ARTIFACT ARGS...: the artifact's loader, libc and libvulkan from the root.
run_arm64_vulkan() {
  VK_ICD_FILENAMES=/usr/share/vulkan/icd.d/lvp_icd.aarch64.json TGC_VK_VALIDATION=0 \
    QEMU_SET_ENV=LD_LIBRARY_PATH=/lib/aarch64-linux-gnu:/usr/lib/aarch64-linux-gnu \
    qemu-aarch64 -L "$ARM64_VK_ROOT" "$@"
}
