#!/usr/bin/env bash
# Installs every Debian package and npm module tgc needs to build and test. Idempotent:
# it does nothing when all packages are already present.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

packages=(
  build-essential cmake ninja-build pkg-config git ccache file clang-format-19
  llvm-19-dev clang-19 lld-19 liblld-19-dev libzstd-dev zlib1g-dev
  # clang-19's sanitizer and libFuzzer runtimes (tools/scripts/sanitize.sh, fuzz.sh)
  libclang-rt-19-dev
  protobuf-compiler libprotobuf-dev libonnx-dev libonnx-testdata python3-onnx python3-numpy python3-sklearn
  libgtest-dev libgmock-dev googletest
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  qemu-user gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross
  libsqlite3-dev libopenblas-dev
  # the terminal test of the LLM artifact's --chat (gguf_chat_tty)
  tmux
  # the vulkan/adreno targets: shaderc in the compiler (glslang's CMake config names its tools),
  # volk in the runtime, lavapipe + the validation layer for the tests, spirv-val
  libshaderc-dev glslang-dev glslang-tools glslc spirv-tools
  libvulkan-dev libvulkan-volk-dev mesa-vulkan-drivers vulkan-validationlayers
  # (arm64 lavapipe for the adreno artifacts goes into a private root below, not a multiarch
  # install: its libc6:arm64 would hang every `qemu-aarch64 -L /usr/aarch64-linux-gnu` test)

)
# Node.js may come from Debian or elsewhere (nodesource ships npm inside nodejs).
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  echo "install-deps: installing ${missing[*]}"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# onnxruntime-node is the CPU reference and speed peer; its install script tries a download
# that fails offline, so skip it (the npm package carries the native binaries).
if [ ! -d "$here/tools/ort/node_modules/onnxruntime-node" ]; then
  (cd "$here/tools/ort" && ONNXRUNTIME_NODE_INSTALL=skip npm install --no-audit --no-fund --silent)
fi

# The GGUF reference (tests/integration/gguf/): llama.cpp's prebuilt libraries and source tree from the
# npm registry (node-llama-cpp), its tools llama_logits/llama_quantize/llama_bench built against
# them, gguf-py for the dequantization tests. About 10 s; kept in the ignored .gguf-ref/.
if [ ! -x "$here/.gguf-ref/llama_logits" ]; then
  bash "$here/tools/gguf-ref/setup.sh" "$here/.gguf-ref" >/dev/null || echo "install-deps: GGUF reference setup failed; the GGUF tests will skip"
fi

# arm64 lavapipe and the Vulkan loader unpacked into the ignored .arm64-vk/ (the adreno artifacts
# run on it under qemu-aarch64 in the tests: tests/integration/arm64_vulkan.sh).
bash "$here/tools/scripts/arm64-vulkan-root.sh" "$here/.arm64-vk" >/dev/null ||
  echo "install-deps: arm64 Vulkan root failed; the adreno artifacts will not run in the tests"
