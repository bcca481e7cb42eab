#include "codegen/vulkan/glsl_to_spirv.h"

#include <shaderc/shaderc.hpp>

#include <cstring>

#include "ir/error.h"

namespace tgc {

namespace {
// Compiler messages can be long; a user error is one line.
std::string first_lines(const std::string& text, int lines) {
  std::string out;
  size_t at = 0;
  for (int i = 0; i < lines && at < text.size(); ++i) {
    size_t end = text.find('\n', at);
    std::string line = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (!line.empty()) out += (out.empty() ? "" : "; ") + line;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return out;
}
}  // namespace

std::string glsl_to_spirv(const std::string& glsl, const std::string& kernel) {
  // One compiler per thread: shaderc compilers are not shared across threads.
  thread_local shaderc::Compiler compiler;
  shaderc::CompileOptions options;
  options.SetTargetEnvironment(shaderc_target_env_vulkan, shaderc_env_version_vulkan_1_1);
  options.SetOptimizationLevel(shaderc_optimization_level_performance);
  shaderc::SpvCompilationResult r =
      compiler.CompileGlslToSpv(glsl, shaderc_compute_shader, (kernel + ".comp").c_str(), options);
  if (r.GetCompilationStatus() != shaderc_compilation_status_success)
    throw Error("vulkan codegen: kernel " + kernel + ": GLSL does not compile: " + first_lines(r.GetErrorMessage(), 3));
  return std::string(reinterpret_cast<const char*>(r.cbegin()), reinterpret_cast<const char*>(r.cend()));
}

std::vector<uint32_t> spirv_capabilities(const std::string& spirv) {
  std::vector<uint32_t> w(spirv.size() / 4), caps;
  std::memcpy(w.data(), spirv.data(), w.size() * 4);
  for (size_t i = 5; i < w.size() && (w[i] >> 16) > 0; i += w[i] >> 16)
    if ((w[i] & 0xffff) == 17 /* OpCapability */ && i + 1 < w.size()) caps.push_back(w[i + 1]);
  return caps;
}

}  // namespace tgc
