#include "codegen/opencl/render_opencl.h"

#include <algorithm>

#include "codegen/gpu/c_renderer.h"
#include "runtime-stub/include/tgc_model.h"

namespace tgc {

namespace {
// OpenCL C 1.2's spellings for the C-style renderer.
class OpenClDialect : public CDialect {
 public:
  // `half`: the kernel computes in f16 where the device has cl_khr_fp16 (tgc_half registers).
  explicit OpenClDialect(bool half) : half_(half) {}

  std::string pointee(const CBuffer& b) const { return (b.written ? "" : "const ") + mem_type(b.dtype); }
  static std::string restrict_(const CKernelHead& k) { return k.distinct ? "* restrict " : "* "; }
  static bool has_images(const CKernelHead& k) {
    return std::any_of(k.buffers.begin(), k.buffers.end(), [](const CBuffer& b) { return b.image_width > 0; });
  }

  std::string reg_type(DType t) const override {
    switch (t) {
      case DType::Bool: return "bool";
      case DType::I8: return "char";
      case DType::U8: return "uchar";
      case DType::I16: return "short";
      case DType::U16: return "ushort";
      case DType::I32: return "int";
      case DType::U32: return "uint";
      case DType::I64: return "long";
      case DType::U64: return "ulong";
      case DType::F64: return "double";
      case DType::F16: return half_ ? "tgc_half" : "float";
      default: return "float";
    }
  }
  // OpenCL C has no bfloat16: bf16 buffers hold the upper 16 bits of a float.
  std::string mem_type(DType t) const override {
    if (t == DType::Bool) return "uchar";
    if (t == DType::F16) return "half";
    if (t == DType::BF16) return "ushort";
    return reg_type(t);
  }

  std::string prelude(const CKernelHead& k) const override {
    std::string s;
    // A texel: through the image, or (images in the pool) the buffer's i-th 4-vector.
    if (has_images(k))
      s += "#if defined(TGC_POOL) && defined(TGC_NO_IMAGES)\n"
           "#define tgc_texel(img, i, x, y) ((img)[i])\n"
           "#define tgc_texel_half(img, i, x, y) vload_half4(i, img)\n"
           "#else\n"
           "__constant sampler_t tgc_texels = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;\n"
           "#define tgc_texel(img, i, x, y) read_imagef(img, tgc_texels, (int2)(x, y))\n"
           "#define tgc_texel_half(img, i, x, y) read_imagef(img, tgc_texels, (int2)(x, y))\n"
           "#endif\n";
    for (const CBuffer& b : k.buffers)
      if (b.dtype == DType::F64) {
        s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
        break;
      }
    // The bits of an f16 value without cl_khr_fp16: through a private ushort, as vstore_half
    // writes them.
    if (half_bits_)
      s += "float tgc_half_from_bits(ushort u) { return vload_half(0, (const __private half*)&u); }\n"
           "ushort tgc_half_bits(float x) { ushort u; vstore_half_rte(x, 0, (__private half*)&u); return u; }\n";
    // One source for every device: f16 arithmetic where the compiler defines cl_khr_fp16, float
    // elsewhere (pocl), with vload_half/vstore_half, which need no extension, in between.
    if (half_)
      s += "#ifdef cl_khr_fp16\n"
           "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
           "typedef half tgc_half;\n"
           "#define tgc_load_half(i, p) ((p)[i])\n"
           "#define tgc_store_half(v, i, p) ((p)[i] = (v))\n"
           "#else\n"
           "typedef float tgc_half;\n"
           "#define tgc_load_half(i, p) vload_half(i, p)\n"
           "#define tgc_store_half(v, i, p) vstore_half_rte(v, i, p)\n"
           "#endif\n";
    return s;
  }
  // The classic signature, and the pool's (render_opencl.h): with TGC_POOL, with the images
  // in the pool too under TGC_NO_IMAGES.
  std::string signature(const CKernelHead& k) const override {
    std::string classic, pooled = "__global uchar* tgc_pool", images;
    for (size_t i = 0; i < k.buffers.size(); ++i) {
      const CBuffer& b = k.buffers[i];
      std::string sep = i ? ", " : "";
      if (b.image_width > 0) {
        classic += sep + "__read_only image2d_t " + b.name;
        images += ", __read_only image2d_t " + b.name;
      } else {
        classic += sep + "__global " + pointee(b) + restrict_(k) + b.name;
      }
    }
    auto head = [&](const std::string& params) { return "__kernel void " + k.name + "(" + params + ")\n"; };
    std::string pool = images.empty() ? "#ifdef TGC_POOL\n" + head(pooled)
                                      : "#if defined(TGC_POOL) && defined(TGC_NO_IMAGES)\n" + head(pooled) +
                                            "#elif defined(TGC_POOL)\n" + head(pooled + images);
    return pool + "#else\n" + head(classic) + "#endif\n";
  }
  // Under TGC_POOL each buffer is the pool at its byte offset, `bN_at`, which the runtime defines
  // when it builds the program (an offset argument costs host time in every enqueue).
  std::string entry(const CKernelHead& k) const override {
    auto view = [&](const CBuffer& b, const std::string& pointee) {
      return "  __global " + pointee + restrict_(k) + b.name + " = (__global " + pointee + "*)(tgc_pool + " + b.name +
             "_at);\n";
    };
    std::string s = "#ifdef TGC_POOL\n", images;
    for (const CBuffer& b : k.buffers)
      if (b.image_width == 0)
        s += view(b, pointee(b));
      else
        images += view(b, b.dtype == DType::F16 ? "const half" : "const float4");
    if (!images.empty()) s += "#ifdef TGC_NO_IMAGES\n" + images + "#endif\n";
    s += "#endif\n";
    if (k.local_size == 1 && k.global_size % kOpenClFlatGroupSize != 0)
      s += "  if (get_global_id(0) >= " + std::to_string(k.global_size) + "UL) return;\n";
    return s;
  }
  std::string global_id() const override { return "get_global_id(0)"; }
  std::string group_id() const override { return "get_group_id(0)"; }
  std::string local_id() const override { return "get_local_id(0)"; }
  // __local variables live at kernel scope.
  std::string shared_array(const std::string& type, const std::string& name, int64_t count) const override {
    return "__local " + type + " " + name + "[" + std::to_string(count) + "];";
  }
  std::string barrier() const override { return "barrier(CLK_LOCAL_MEM_FENCE)"; }
  std::string global_barrier() const override { return "barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE)"; }

  std::string vector_type(DType t) const override {
    return t == DType::F32 || t == DType::I32 || t == DType::U32 ? reg_type(t) + "4" : "";
  }
  // An image's texel i is at (i % width, i / width) (runtime-stub/include/tgc_model.h TGC_STORAGE_IMAGE).
  std::string vector_element(const CBuffer& b, const std::string& index4) const override {
    if (b.image_width > 0) {
      std::string w = std::to_string(b.image_width), texel = b.dtype == DType::F16 ? "tgc_texel_half(" : "tgc_texel(";
      std::string xy = b.image_width < TGC_IMAGE_ROW_TEXELS
                           ? "(int)(" + index4 + "), 0"
                           : "(int)(" + index4 + " % " + w + "), (int)(" + index4 + " / " + w + ")";
      return texel + b.name + ", " + index4 + ", " + xy + ")";
    }
    return "((__global " + std::string(b.written ? "" : "const ") + vector_type(b.dtype) + "*)" + b.name + ")[" +
           index4 + "]";
  }
  std::string vector_make(DType t, const std::string& a, const std::string& b, const std::string& c,
                          const std::string& d) const override {
    return "(" + vector_type(t) + ")(" + a + ", " + b + ", " + c + ", " + d + ")";
  }

  std::string cast(const std::string& type, const std::string& x) const override { return "(" + type + ")(" + x + ")"; }
  std::string zero(const std::string& type) const override { return "(" + type + ")0"; }
  std::string float_suffix(DType t) const override { return t == DType::F64 ? "" : "f"; }
  std::string int_suffix(DType t) const override { return t == DType::I64 ? "L" : ""; }
  std::string nan() const override { return "NAN"; }
  std::string infinity() const override { return "INFINITY"; }
  std::string int_min(DType t) const override {
    return t == DType::I64 ? "LONG_MIN" : t == DType::I32 ? "INT_MIN" : t == DType::I16 ? "SHRT_MIN" : "CHAR_MIN";
  }
  std::string function(CFunction f) const override {
    switch (f) {
      case CFunction::Exp2: return "exp2";
      case CFunction::Log2: return "log2";
      case CFunction::Sin: return "sin";
      case CFunction::Sqrt: return "sqrt";
      case CFunction::Trunc: return "trunc";
      case CFunction::FloatMax: return "fmax";
      case CFunction::IntMax: return "max";
      case CFunction::FloatMod: return "fmod";
      case CFunction::Fma: return "fma";
      case CFunction::IsNan: return "isnan";
      case CFunction::IsInf: return "isinf";
    }
    return "";
  }
  std::string bitcast(DType from, DType to, const std::string& x) const override {
    if (from != DType::F16 && to != DType::F16) return "as_" + reg_type(to) + "(" + x + ")";
    half_bits_ = true;
    if (to == DType::F16) return cast(reg_type(to), "tgc_half_from_bits(" + cast("ushort", x) + ")");
    return cast(reg_type(to), "tgc_half_bits(" + cast("float", x) + ")");
  }
  // vload_half/vstore_half need no cl_khr_fp16 (pocl in CI has none).
  std::string load_half(DType t, const std::string& buffer, const std::string& index) const override {
    if (t == DType::F16) return std::string(half_ ? "tgc_load_half(" : "vload_half(") + index + ", " + buffer + ")";
    return bf16_from_bits(buffer + "[" + index + "]");
  }
  std::string store_half(DType t, const std::string& buffer, const std::string& index,
                         const std::string& value) const override {
    if (t == DType::F16)
      return std::string(half_ ? "tgc_store_half(" : "vstore_half_rte(") + value + ", " + index + ", " + buffer + ")";
    return buffer + "[" + index + "] = " + bf16_bits(value);
  }

 private:
  bool half_;
  mutable bool half_bits_ = false;  // bitcast() used the helpers prelude() then defines
};
}  // namespace

OpenClLaunch opencl_launch(const LoopProgram& p) {
  int64_t local = p.locals.empty() ? kOpenClFlatGroupSize : gpu_local_size(p);
  return {local, (gpu_global_size(p) + local - 1) / local * local};
}

std::string render_opencl(const Graph& g, const LoopProgram& p, const GpuOptions& o) {
  return render_c(g, lower_gpu(g, p, o), OpenClDialect(computes_in_half(p)));
}

std::string render_opencl_serial(const Graph& g, const std::vector<const LoopProgram*>& stages, const std::string& name,
                                 int64_t group, const GpuOptions& o) {
  std::vector<GpuProgram> lowered;
  bool half = false;
  for (const LoopProgram* p : stages) lowered.push_back(lower_gpu(g, *p, o)), half = half || computes_in_half(*p);
  return render_c_serial(g, lowered, name, group, OpenClDialect(half));
}

}  // namespace tgc
