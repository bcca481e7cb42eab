#include "codegen/vulkan/render_glsl.h"

#include "codegen/gpu/c_renderer.h"

namespace tgc {

namespace {
// GLSL 450 (Vulkan) spellings for the C-style renderer. Sized types come from
// GL_EXT_shader_explicit_arithmetic_types; glslang emits a capability only for the types a
// shader uses, and the runtime checks those against the device's features.
class GlslDialect : public CDialect {
 public:
  // A 32-bit kernel computes its ids in uint, so only kernels with 64-bit data need Int64.
  // `half`: the kernel computes in f16 (float16_t registers, shaderFloat16).
  GlslDialect(int index_bits, bool subgroups, bool half)
      : index_(index_bits == 32 ? "int" : "int64_t"),
        thread_(index_bits == 32 ? "tgc_thread()" : "tgc_thread64()"),
        subgroups_(subgroups),
        half_(half) {}

  std::string reg_type(DType t) const override {
    switch (t) {
      case DType::Bool: return "bool";
      case DType::I8: return "int8_t";
      case DType::U8: return "uint8_t";
      case DType::I16: return "int16_t";
      case DType::U16: return "uint16_t";
      case DType::I32: return "int";
      case DType::U32: return "uint";
      case DType::I64: return "int64_t";
      case DType::U64: return "uint64_t";
      case DType::F64: return "double";
      case DType::F16: return half_ ? "float16_t" : "float";
      default: return "float";
    }
  }
  // Buffers cannot hold bool; bf16 buffers hold the upper 16 bits of a float.
  std::string mem_type(DType t) const override {
    if (t == DType::Bool) return "uint8_t";
    if (t == DType::F16) return "float16_t";
    if (t == DType::BF16) return "uint16_t";
    return reg_type(t);
  }

  std::string prelude(const CKernelHead& k) const override {
    std::string s =
        "#version 450\n"
        "#extension GL_EXT_shader_explicit_arithmetic_types : require\n"
        "#extension GL_EXT_shader_16bit_storage : require\n"
        "#extension GL_EXT_shader_8bit_storage : require\n" +
        std::string(subgroups_ ? "#extension GL_KHR_shader_subgroup_arithmetic : require\n" : "") + "// " + k.name +
        "\n"
        "layout(local_size_x_id = 0) in;\n";
    for (size_t i = 0; i < k.buffers.size(); ++i) {
      const CBuffer& b = k.buffers[i];
      if (b.vars) {  // run-time dims: the vars buffer's i64 values, read as their low 32 bits
        s += "layout(std430, set = 0, binding = " + std::to_string(i) + ") restrict readonly buffer TgcVars { int " +
             "tgc_vars[]; };\n";
        continue;
      }
      s += "layout(std430, set = 0, binding = " + std::to_string(i) + ") restrict " + (b.written ? "" : "readonly ") +
           "buffer B" + std::to_string(i) + " { " + mem_type(b.dtype) + " " + b.name + "[]; };\n";
      // The same binding as 4-vectors. An output is written through one view only (the renderer
      // vectorizes all of its stores or none), so both views stay restrict.
      if (b.vector4)
        s += "layout(std430, set = 0, binding = " + std::to_string(i) + ") restrict " + (b.written ? "" : "readonly ") +
             "buffer B" + std::to_string(i) + "v { " + vector_type(b.dtype) + " " + b.name + "v[]; };\n";
    }
    // C's fmod (GLSL's mod floors), and exp2/log2/sin of doubles, which GLSL lacks: computed in
    // float. glslang drops functions nothing calls, so the double ones cost no Float64.
    s += "float tgc_fmod(float a, float b) { return a - b * trunc(a / b); }\n"
         "double tgc_fmod(double a, double b) { return a - b * trunc(a / b); }\n";
    for (const char* f : {"exp2", "log2", "sin"})
      s += std::string("float tgc_") + f + "(float x) { return " + f + "(x); }\n" + "double tgc_" + f +
           "(double x) { return double(" + f + "(float(x))); }\n";
    // Work-groups may be spread over x and y; padding threads past the launch leave at once
    // (a whole work-group at a time where the kernel has work-groups, so barriers stay uniform).
    // A 32-bit kernel's launch fits in an int, and its padding (under 65535 work-groups of at
    // most 1024 threads) in a uint.
    s += "uint tgc_group() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }\n";
    if (index_ == "int")
      s += "uint tgc_thread() { return tgc_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; }\n";
    else
      s += "uint64_t tgc_thread64() { return uint64_t(tgc_group()) * gl_WorkGroupSize.x + gl_LocalInvocationID.x; }\n";
    s += "void tgc_kernel();\n"
         "void main() {\n"
         "  if (" +
         thread_ + " >= " + std::to_string(k.global_size) + (index_ == "int" ? "u" : "ul") +
         ") return;\n"
         "  tgc_kernel();\n"
         "}\n";
    return s;
  }
  std::string signature(const CKernelHead&) const override { return "void tgc_kernel()"; }
  std::string global_id() const override { return index_ + "(" + thread_ + ")"; }
  std::string group_id() const override { return index_ + "(tgc_group())"; }
  std::string local_id() const override { return index_ + "(gl_LocalInvocationID.x)"; }
  std::string shared_array(const std::string& type, const std::string& name, int64_t count) const override {
    return "shared " + type + " " + name + "[" + std::to_string(count) + "];";
  }
  bool shared_at_file_scope() const override { return true; }
  std::string barrier() const override { return "memoryBarrierShared(); barrier()"; }
  // From the vars buffer (not push constants: a recorded command buffer then serves every decode
  // step of an LLM, whose cache length changes), the low word of each i64 (no Int64 needed).
  std::string var_value(int64_t slot) const override { return "tgc_vars[" + std::to_string(2 * slot) + "]"; }
  // 32-bit values only: narrower and 64-bit ones would need shaderSubgroupExtendedTypes / Int64.
  std::string subgroup_reduce(Op op, DType t) const override {
    bool fits = t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::I32 || t == DType::U32;
    if (!subgroups_ || !fits) return "";
    return op == Op::Add ? "subgroupAdd" : op == Op::Mul ? "subgroupMul" : op == Op::Max ? "subgroupMax" : "";
  }
  std::string subgroup_size() const override { return "gl_SubgroupSize"; }
  std::string subgroup_lane() const override { return "gl_SubgroupInvocationID"; }

  // (Bytes too: a quantized weight's four packed bytes in one 32-bit load instead of four.)
  std::string vector_type(DType t) const override {
    if (t == DType::F16) return half_ ? "f16vec4" : "";
    if (t == DType::U8 || t == DType::I8) return t == DType::U8 ? "u8vec4" : "i8vec4";
    return t == DType::F32 ? "vec4" : t == DType::I32 ? "ivec4" : t == DType::U32 ? "uvec4" : "";
  }
  std::string vector_element(const CBuffer& b, const std::string& index4) const override {
    return b.name + "v[" + index4 + "]";
  }
  std::string vector_make(DType t, const std::string& a, const std::string& b, const std::string& c,
                          const std::string& d) const override {
    return vector_type(t) + "(" + a + ", " + b + ", " + c + ", " + d + ")";
  }
  std::string cast(const std::string& type, const std::string& x) const override { return type + "(" + x + ")"; }
  std::string zero(const std::string& type) const override { return type + "(0)"; }
  std::string float_suffix(DType t) const override { return t == DType::F64 ? "lf" : ""; }
  std::string int_suffix(DType t) const override {
    switch (t) {
      case DType::I64: return "l";
      case DType::U64: return "ul";
      case DType::U32: return "u";
      default: return "";
    }
  }
  std::string nan() const override { return "uintBitsToFloat(0x7fc00000u)"; }
  std::string infinity() const override { return "uintBitsToFloat(0x7f800000u)"; }
  std::string int_min(DType t) const override {
    switch (t) {
      case DType::I64: return "(-9223372036854775807l - 1l)";
      case DType::I32: return "(-2147483647 - 1)";
      case DType::I16: return "int16_t(-32768)";
      default: return "int8_t(-128)";
    }
  }
  // GLSL leaves % of negative integers undefined (NVIDIA's driver computes it as unsigned: 7 % -3
  // gave 7), and / rounding of them too: signed ones divide their magnitudes, in int where they
  // are narrower (abs of int8_t/int16_t is not core GLSL), and take C's signs.
  std::string int_div(DType t, const std::string& a, const std::string& b) const override {
    if (is_unsigned(t)) return a + " / " + b;
    std::string q = magnitude(t, a) + " / " + magnitude(t, b);
    return reg_type(t) + "((" + a + " < " + zero(reg_type(t)) + ") != (" + b + " < " + zero(reg_type(t)) + ") ? -(" +
           q + ") : " + q + ")";
  }
  std::string int_rem(DType t, const std::string& a, const std::string& b) const override {
    if (is_unsigned(t)) return a + " % " + b;
    std::string r = magnitude(t, a) + " % " + magnitude(t, b);
    return reg_type(t) + "(" + a + " < " + zero(reg_type(t)) + " ? -(" + r + ") : " + r + ")";
  }
  std::string function(CFunction f) const override {
    switch (f) {
      case CFunction::Exp2: return "tgc_exp2";
      case CFunction::Log2: return "tgc_log2";
      case CFunction::Sin: return "tgc_sin";
      case CFunction::Sqrt: return "sqrt";
      case CFunction::Trunc: return "trunc";
      case CFunction::FloatMax: return "max";
      case CFunction::IntMax: return "max";
      case CFunction::FloatMod: return "tgc_fmod";
      case CFunction::Fma: return "fma";
      case CFunction::IsNan: return "isnan";
      case CFunction::IsInf: return "isinf";
    }
    return "";
  }
  // f16 registers that are floats: their bits go through packHalf2x16, which needs no Float16.
  std::string bitcast(DType from, DType to, const std::string& x) const override {
    if (half_ && from == DType::F16) return cast(reg_type(to), "float16BitsToUint16(" + x + ")");
    if (half_ && to == DType::F16) return "uint16BitsToFloat16(uint16_t(" + x + "))";
    if (from == DType::F32) return to == DType::U32 ? "floatBitsToUint(" + x + ")" : "floatBitsToInt(" + x + ")";
    if (to == DType::F32) return from == DType::U32 ? "uintBitsToFloat(" + x + ")" : "intBitsToFloat(" + x + ")";
    if (from == DType::F64) return to == DType::U64 ? "doubleBitsToUint64(" + x + ")" : "doubleBitsToInt64(" + x + ")";
    if (to == DType::F64) return from == DType::U64 ? "uint64BitsToDouble(" + x + ")" : "int64BitsToDouble(" + x + ")";
    if (from == DType::F16) return reg_type(to) + "(packHalf2x16(vec2(" + x + ", 0.0)) & 0xffffu)";
    if (to == DType::F16) return "unpackHalf2x16(uint(uint16_t(" + x + "))).x";
    return cast(reg_type(to), x);
  }
  std::string load_half(DType t, const std::string& buffer, const std::string& index) const override {
    if (t == DType::F16) return half_ ? buffer + "[" + index + "]" : "float(" + buffer + "[" + index + "])";
    return bf16_from_bits(buffer + "[" + index + "]");
  }
  std::string store_half(DType t, const std::string& buffer, const std::string& index,
                         const std::string& value) const override {
    if (t == DType::F16) return buffer + "[" + index + "] = float16_t(" + value + ")";
    return buffer + "[" + index + "] = " + bf16_bits(value);
  }

 private:
  // |x| of a signed integer, as int64_t or int.
  std::string magnitude(DType t, const std::string& x) const {
    return t == DType::I64 ? "abs(" + x + ")" : "abs(int(" + x + "))";
  }

  std::string index_;   // the integer type of the kernel's index width
  std::string thread_;  // the flattened thread id, unsigned, in that width
  bool subgroups_;      // group reduces may use subgroup arithmetic
  bool half_;           // f16 registers are float16_t
};
}  // namespace

std::string render_glsl(const Graph& g, const LoopProgram& p, const GpuOptions& o) {
  return render_c(g, lower_gpu(g, p, o), GlslDialect(o.index_bits, o.subgroups, o.half_math && computes_in_half(p)));
}

}  // namespace tgc
