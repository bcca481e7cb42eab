// The spellings of one C-family kernel language (OpenCL C, GLSL). The C-style renderer
// (c_renderer.h) writes every statement and expression form -- declarations, loops, operators,
// ternaries, integer division guards, group reduces -- and asks the dialect only for what differs
// between languages. A dialect never sees DType::Index: the renderer passes the integer type of
// the kernel's index width instead.
#pragma once
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/uop.h"

namespace tgc {

struct CBuffer {
  std::string name;  // as the renderer indexes it: name[i]
  DType dtype;
  bool written;          // the kernel's output (the first buffer); the others are only read
  bool vars;             // the vars buffer (i64 run-time dims; GLSL reads their low words, var_value)
  bool vector4 = false;  // also accessed 4 elements at a time (vector_element)
  // > 0: a 2D image of 4-element texels this wide (BufferInfo::image), read only as 4-vectors.
  int64_t image_width = 0;
};

struct CKernelHead {
  std::string name;
  std::vector<CBuffer> buffers;  // in kernel-argument order
  int64_t local_size;            // threads per work-group
  int64_t global_size;           // threads in all (dimension 0)
  int64_t num_vars;              // run-time dims of the model (VARs), in vars-buffer slot order
  // No two buffers overlap (C's restrict). Not so in a serial launch, whose later stages may
  // reuse the memory of buffers its earlier ones are done with.
  bool distinct = true;
};

// Math the renderer spells as calls.
enum class CFunction { Exp2, Log2, Sin, Sqrt, Trunc, FloatMax, IntMax, FloatMod, Fma, IsNan, IsInf };

class CDialect {
 public:
  virtual ~CDialect() = default;

  // Types: in registers (f16/bf16 compute in float), and as buffer elements.
  virtual std::string reg_type(DType t) const = 0;
  virtual std::string mem_type(DType t) const = 0;

  // The kernel: what precedes its signature at file scope (extensions, buffer bindings), and the
  // signature itself, up to the opening brace.
  virtual std::string prelude(const CKernelHead& k) const { return ""; }
  virtual std::string signature(const CKernelHead& k) const = 0;
  // Lines after the opening brace, before the ids are decoded (OpenCL: the pool's buffers).
  virtual std::string entry(const CKernelHead& k) const { return ""; }
  // Ids of dimension 0, as expressions convertible to the index type.
  virtual std::string global_id() const = 0;
  virtual std::string group_id() const = 0;
  virtual std::string local_id() const = 0;
  // Work-group shared memory: an array declaration, and whether it goes at file scope (GLSL)
  // rather than at the top of the kernel (OpenCL C).
  virtual std::string shared_array(const std::string& type, const std::string& name, int64_t count) const = 0;
  virtual bool shared_at_file_scope() const { return false; }
  virtual std::string barrier() const = 0;  // a statement without the ';'
  // A barrier that also makes the work-group's global memory writes visible to it; "" where the
  // language has none (no serial launches then).
  virtual std::string global_barrier() const { return ""; }
  // The value of run-time dim `slot` where the language reads the vars buffer other than as i64
  // (GLSL: the low 32 bits, so no 64-bit integers are needed); "" to read it as the buffer's type.
  virtual std::string var_value(int64_t slot) const { return ""; }
  // Subgroup reduces ("" where the language or target has none): the function reducing a 32-bit
  // value of register type `t` with `op` (Add, Mul, Max) over the whole subgroup, and the
  // subgroup's size and this thread's lane in it (unsigned). Subgroups are taken to be runs of
  // consecutive local ids, as they are for one-dimensional work-groups on every driver.
  virtual std::string subgroup_reduce(Op op, DType t) const { return ""; }
  virtual std::string subgroup_size() const { return ""; }
  virtual std::string subgroup_lane() const { return ""; }

  // 4-element vectors of 32-bit buffer elements, for an UPCAST's four neighbouring loads or
  // stores (one 128-bit access where the driver would not merge four scalar ones; every buffer
  // starts 16-byte aligned). vector_type is "" where the dialect has no such access for `t`;
  // vector_element is element `index4` of `buffer` read as 4-vectors (an lvalue); vector_make
  // builds one from four values.
  virtual std::string vector_type(DType t) const { return ""; }
  virtual std::string vector_element(const CBuffer& buffer, const std::string& index4) const { return ""; }
  virtual std::string vector_make(DType t, const std::string& a, const std::string& b, const std::string& c,
                                  const std::string& d) const {
    return "";
  }

  // Values.
  virtual std::string cast(const std::string& type, const std::string& x) const = 0;
  virtual std::string zero(const std::string& type) const = 0;  // 0 of a register type
  virtual std::string float_suffix(DType t) const = 0;
  virtual std::string int_suffix(DType t) const = 0;
  virtual std::string nan() const = 0;
  virtual std::string infinity() const = 0;
  virtual std::string int_min(DType t) const = 0;  // of a signed integer type
  // a / b and a % b of integers of type t (b != 0), truncated toward zero as in C.
  virtual std::string int_div(DType t, const std::string& a, const std::string& b) const { return a + " / " + b; }
  virtual std::string int_rem(DType t, const std::string& a, const std::string& b) const { return a + " % " + b; }
  virtual std::string function(CFunction f) const = 0;
  virtual std::string bitcast(DType from, DType to, const std::string& x) const = 0;
  // f16 and bf16 elements, which not every language can address as such (OpenCL C without
  // cl_khr_fp16, GLSL without 16-bit storage). Values are in register form (float); the store
  // is a statement without the ';'.
  virtual std::string load_half(DType t, const std::string& buffer, const std::string& index) const = 0;
  virtual std::string store_half(DType t, const std::string& buffer, const std::string& index,
                                 const std::string& value) const = 0;

  // bf16 in registers is a float whose low 16 bits are zero, in any language with 32-bit
  // bitcasts. bf16_round rounds a float expression to bf16 (to nearest, ties to even; NaN and
  // inf kept, as LLVM's fptrunc and the interpreter do); bf16_bits gives the 16 bits a bf16
  // buffer stores, bf16_from_bits the float they hold.
  std::string bf16_round(const std::string& v) const;
  std::string bf16_bits(const std::string& v) const;
  std::string bf16_from_bits(const std::string& bits) const;
  std::string call(CFunction f, const std::vector<std::string>& args) const;
};

}  // namespace tgc
