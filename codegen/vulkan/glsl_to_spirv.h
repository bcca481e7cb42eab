// GLSL compute shaders to SPIR-V (Vulkan 1.1), in process with shaderc.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace tgc {

// The SPIR-V words as bytes (little-endian). Throws tgc::Error naming `kernel` with the first
// lines of the compiler's message when the source does not compile.
std::string glsl_to_spirv(const std::string& glsl, const std::string& kernel);

// The OpCapability operands of a SPIR-V module (the device features it needs).
std::vector<uint32_t> spirv_capabilities(const std::string& spirv);

}  // namespace tgc
