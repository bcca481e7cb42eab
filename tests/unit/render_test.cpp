// The renderers, directly: the GPU lowering (launch sizes, work-item decode, group reduces, the
// 32-bit index refusal), the C-style renderer through OpenCL C, GLSL (compiled to SPIR-V) and a
// toy dialect, and the LLVM expression emitter with its hooks.
#include <gtest/gtest.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstring>

#include "codegen/cuda/render_ptx.h"
#include "codegen/gpu/c_renderer.h"
#include "codegen/gpu/image_weights.h"
#include "codegen/llvm/cpu_kernel.h"
#include "codegen/llvm/llvm_expr.h"
#include "codegen/gpu/runtime_candidate.h"
#include "codegen/opencl/render_opencl.h"
#include "codegen/vulkan/glsl_to_spirv.h"
#include "codegen/vulkan/render_glsl.h"
#include "ir/error.h"
#include "ir/tensor.h"
#include "passes/beam.h"
#include "passes/opt.h"
#include "passes/precision.h"
#include "passes/tensor_cores.h"

namespace tgc {
namespace {

Kernel only_kernel(Graph& g, const Tensor& out) {
  Schedule s = schedule(g, {out.uop()});
  EXPECT_EQ(s.kernels.size(), 1u);
  return s.kernels.at(0);
}

LoopProgram gpu_program(Graph& g, const Tensor& out, const std::vector<Opt>& opts) {
  return lower(g, apply_opts(g, only_kernel(g, out), opts, opencl_profile()), {.inner_loop = false});
}

// A CPU loop program rendered to LLVM IR text, which must verify.
std::string cpu_ir(const Graph& g, const LoopProgram& p, const TargetProfile& t) {
  llvm::LLVMContext ctx;
  llvm::Module mod("m", ctx);
  render_cpu_kernel(mod, g, p, cpu_work_split(p), t);
  std::string err, ir;
  llvm::raw_string_ostream es(err), os(ir);
  EXPECT_FALSE(llvm::verifyModule(mod, &es)) << err;
  mod.print(os, nullptr);
  return ir;
}

Tensor matmul(Graph& g, int64_t m, int64_t k, int64_t n) {
  return Tensor::input(g, "a", DType::F32, {m, k}).matmul(Tensor::input(g, "b", DType::F32, {k, n}));
}

std::vector<int64_t> extents(const std::vector<IdDecode>& d) {
  std::vector<int64_t> e;
  for (const IdDecode& x : d) e.push_back(x.extent);
  return e;
}

void collect_group_reduces(const std::vector<LStmt>& body, std::vector<const UOp*>& out) {
  for (const LStmt& s : body) {
    if (s.kind == LStmt::GroupReduce) out.push_back(s.u);
    collect_group_reduces(s.body, out);
  }
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(GpuLowering, LocalAndGroupRangesDecodeFromTheLocalId) {
  Graph g;
  // [8,64] x [64,96]: 96 outputs a row split into 3 groups of 32 threads, the 64-long reduce
  // into 4 partial sums per output.
  LoopProgram p = gpu_program(g, matmul(g, 8, 64, 96), {{OptOp::Local, 1, 32}, {OptOp::Group, 2, 4}});
  GpuProgram k = lower_gpu(g, p);
  EXPECT_EQ(k.local_size, 32 * 4);
  EXPECT_EQ(k.global_size, 8 * 96 * 4);
  EXPECT_EQ(gpu_global_size(p), k.global_size);
  EXPECT_TRUE(k.work_groups);
  EXPECT_EQ(extents(k.local_decode), (std::vector<int64_t>{4, 32})) << "innermost (the last split) first";
  EXPECT_EQ(extents(k.global_decode), (std::vector<int64_t>{3, 8}));
  EXPECT_TRUE(k.bounded.empty());
  ASSERT_EQ(k.store_gate.size(), 1u);
  EXPECT_EQ(k.store_gate[0]->range().kind, RangeKind::Group);

  std::vector<const UOp*> reduces;
  collect_group_reduces(p.body, reduces);
  ASSERT_EQ(reduces.size(), 1u);
  GroupReduceSlots slots = group_reduce_slots(k, reduces[0]);
  EXPECT_EQ(slots.count, 128);
  ASSERT_EQ(slots.terms.size(), 2u);
  EXPECT_TRUE(slots.terms[0].folded);
  EXPECT_EQ(slots.terms[0].stride, 1);
  EXPECT_EQ(slots.terms[0].extent, 4);
  EXPECT_FALSE(slots.terms[1].folded) << "a LOCAL range is not reduced";
  EXPECT_EQ(slots.terms[1].stride, 4);
}

TEST(GpuLowering, WithoutLocalsEveryThreadIsOneOutput) {
  Graph g;
  LoopProgram p = gpu_program(g, matmul(g, 8, 64, 96), {});
  GpuProgram k = lower_gpu(g, p);
  EXPECT_FALSE(k.work_groups);
  EXPECT_EQ(k.local_size, 1);
  EXPECT_EQ(k.global_size, 8 * 96);
  EXPECT_TRUE(k.local_decode.empty());
  EXPECT_EQ(extents(k.global_decode), (std::vector<int64_t>{96, 8}));
  EXPECT_TRUE(k.store_gate.empty());
}

TEST(GpuLowering, GroupTopAndPaddedLocalsCountEveryThread) {
  Graph g;
  // 61 outputs padded to 64 in groups of 16; each thread sums one contiguous run of 40/8.
  Tensor x = Tensor::input(g, "x", DType::F32, {61, 40});
  LoopProgram p = gpu_program(g, x.sum({1}), {{OptOp::Padto, 0, 64}, {OptOp::Local, 0, 16}, {OptOp::GroupTop, 1, 8}});
  GpuProgram k = lower_gpu(g, p);
  EXPECT_EQ(k.local_size, 16 * 8);
  EXPECT_EQ(k.global_size, 64 * 8) << "the padding runs too (its stores are gated)";
  EXPECT_EQ(extents(k.local_decode), (std::vector<int64_t>{8, 16}));
  ASSERT_EQ(k.store_gate.size(), 1u);
  EXPECT_EQ(k.store_gate[0]->src[0]->ival(), 8);
}

TEST(GpuLowering, EachReduceFoldsOnlyItsOwnGroupRanges) {
  Graph g;
  Tensor x = Tensor::input(g, "x", DType::F32, {8, 64});
  // Axes: rows, then the sum's range, then the max's.
  LoopProgram p = gpu_program(g, x.sum({1}) + x.max({1}), {{OptOp::Group, 1, 4}, {OptOp::Group, 2, 8}});
  GpuProgram k = lower_gpu(g, p);
  std::vector<const UOp*> reduces;
  collect_group_reduces(p.body, reduces);
  ASSERT_EQ(reduces.size(), 2u);
  for (const UOp* r : reduces) {
    GroupReduceSlots slots = group_reduce_slots(k, r);
    EXPECT_EQ(slots.count, 32);
    int folded = 0;
    for (const SlotTerm& t : slots.terms) {
      bool own = std::count(r->src.begin() + 1, r->src.end(), t.range) > 0;
      EXPECT_EQ(t.folded, own);
      folded += t.folded;
    }
    EXPECT_EQ(folded, 1);
  }
  EXPECT_EQ(k.store_gate.size(), 2u);
}

TEST(GpuLowering, WorkGroupsPastARunTimeDimReturn) {
  Graph g;
  const UOp* n = g.declare_var("n", 1, 64);
  Tensor y = Tensor::input(g, "x", DType::F32, {64, 16}).relu();
  g.set_var_axis(y.uop(), 0, n);
  LoopProgram p = gpu_program(g, y, {{OptOp::Local, 1, 16}});
  GpuProgram k = lower_gpu(g, p);
  ASSERT_EQ(k.bounded.size(), 1u);
  EXPECT_EQ(k.bounded[0]->src[0], n);
  EXPECT_EQ(k.global_size, 64 * 16) << "sized at the upper bound";
  std::string cl = render_opencl(g, p);
  EXPECT_NE(cl.find(") return;\n"), std::string::npos) << cl;
  EXPECT_LT(cl.find(") return;\n"), cl.find("b0[")) << cl;
  // At 32 bits the i64 value of the VAR is read as an index.
  EXPECT_NE(render_opencl(g, p, {.index_bits = 32}).find("(int)(b"), std::string::npos);
}

// A run-time dim through a pad: the output range ends at n + 2, an expression no statement
// computes. The C renderers write it out in place; the PTX computes it in the entry block (it
// failed with "ADD used before it was computed" on det with run-time H and W).
TEST(GpuLowering, RangesEndingAtExpressionsOfVars) {
  Graph g;
  const UOp* n = g.declare_var("n", 1, 64);
  Tensor y = Tensor::input(g, "x", DType::F32, {64, 16}).pad({{1, 1}, {0, 0}});
  g.set_var_axis(y.uop(), 0, g.make(Op::Add, DType::Index, {n, g.cint(2)}));
  LoopProgram p = gpu_program(g, y, {});
  GpuProgram k = lower_gpu(g, p);
  ASSERT_EQ(k.bounded.size(), 1u);
  EXPECT_EQ(k.bounded[0]->src[0]->op, Op::Add);
  EXPECT_NE(render_opencl(g, p).find(" >= ((b"), std::string::npos) << render_opencl(g, p);
  EXPECT_NO_THROW(render_ptx(g, p, {.sm = "sm_90"}));
}

TEST(GpuLowering, ThirtyTwoBitIndicesRefuseWhatTheyCannotAddress) {
  Graph g;
  // A sum over 2^32 elements: its output and launch fit, its input does not.
  LoopProgram big = gpu_program(g, Tensor::input(g, "huge", DType::F32, {1 << 16, 1 << 16}).sum({1}), {});
  EXPECT_NO_THROW(lower_gpu(g, big, {.index_bits = 64}));
  try {
    lower_gpu(g, big, {.index_bits = 32});
    ADD_FAILURE() << "a 2^32-element input passed at 32 bits";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("kernel " + big.name), std::string::npos) << m;
    EXPECT_NE(m.find("huge"), std::string::npos) << m;
    EXPECT_NE(m.find("4294967296 elements"), std::string::npos) << m;
  }
  EXPECT_THROW(render_opencl(g, big, {.index_bits = 32}), Error);

  // Every buffer fits (2^31 - 1 elements), the launch padded to 2^31 threads does not.
  LoopProgram wide = gpu_program(g, Tensor::input(g, "x", DType::F32, {2147483647}).relu(),
                                 {{OptOp::Padto, 0, 64}, {OptOp::Local, 0, 64}});
  try {
    lower_gpu(g, wide, {.index_bits = 32});
    ADD_FAILURE() << "a launch of 2^31 threads passed at 32 bits";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("kernel " + wide.name), std::string::npos) << m;
    EXPECT_NE(m.find("launch has 2147483648 threads"), std::string::npos) << m;
  }
  EXPECT_THROW(lower_gpu(g, wide, {.index_bits = 16}), Error);

  LoopProgram fits = gpu_program(g, Tensor::input(g, "y", DType::F32, {2147483647}).relu(), {});
  EXPECT_NO_THROW(lower_gpu(g, fits, {.index_bits = 32}));
}

TEST(OpenClDialect, WorkGroupKernelStructure) {
  Graph g;
  LoopProgram p = gpu_program(g, matmul(g, 8, 64, 96), {{OptOp::Local, 1, 32}, {OptOp::Group, 2, 4}});
  std::string cl = render_opencl(g, p);
  // A pointer per buffer, or (TGC_POOL) the pool, each buffer at the offset the build defines.
  std::string head =
      "#ifdef TGC_POOL\n__kernel void " + p.name +
      "(__global uchar* tgc_pool)\n"
      "#else\n__kernel void " +
      p.name +
      "(__global float* restrict b0, __global const float* restrict b1, __global const float* restrict b2)\n"
      "#endif\n {\n#ifdef TGC_POOL\n"
      "  __global float* restrict b0 = (__global float*)(tgc_pool + b0_at);\n"
      "  __global const float* restrict b1 = (__global const float*)(tgc_pool + b1_at);\n"
      "  __global const float* restrict b2 = (__global const float*)(tgc_pool + b2_at);\n"
      "#endif\n  long gid = get_group_id(0), lid = get_local_id(0);\n";
  EXPECT_EQ(cl.rfind(head, 0), 0u) << cl;
  EXPECT_EQ(count(cl, "__local float sm_"), 1u) << cl;
  EXPECT_NE(cl.find("[128];\n"), std::string::npos) << cl;
  EXPECT_EQ(count(cl, "barrier(CLK_LOCAL_MEM_FENCE);"), 2u) << cl;
  EXPECT_EQ(count(cl, "% 32; lid /= 32;"), 1u) << cl;
  EXPECT_EQ(count(cl, "% 8; gid /= 8;"), 1u) << cl;
  // The one store, by the group's first thread.
  std::string gate = "r" + std::to_string(lower_gpu(g, p).store_gate[0]->range().id) + " == 0)\n";
  ASSERT_NE(cl.find(gate), std::string::npos) << cl;
  EXPECT_EQ(cl.find("b0[", cl.find(gate)), cl.find("b0[")) << cl;
  EXPECT_EQ(cl.substr(cl.size() - 2), "}\n");
  EXPECT_EQ(cl.find("int gid"), std::string::npos);

  std::string narrow = render_opencl(g, p, {.index_bits = 32});
  EXPECT_NE(narrow.find("  int gid = get_group_id(0), lid = get_local_id(0);\n"), std::string::npos) << narrow;
  EXPECT_EQ(count(narrow, "long"), count(narrow, "ulong b")) << "only the pool's offsets are 64-bit\n" << narrow;
  TargetProfile narrow_profile;
  narrow_profile.index_bits = 32;
  std::string candidate =
      runtime_candidate(RuntimeApi::OpenCl, g, p, dialect_ops(Dialect::OpenCL).render_gpu(g, p, narrow_profile));
  EXPECT_NE(candidate.find("\nsource\n" + narrow), std::string::npos) << "tuned as it runs";
}

// A serial launch (passes/serial_launches.h): a group-reduce stage whose 10 groups of 8 threads
// fit one round of the 256-thread group (the surplus repeats the last group without storing),
// then a flat stage whose 300 outputs take two rounds; a global barrier between them.
TEST(OpenClDialect, SerialLaunchRunsItsStagesInOneWorkGroup) {
  Graph g;
  Tensor x = Tensor::input(g, "x", DType::F32, {10, 64}), y = Tensor::input(g, "y", DType::F32, {300});
  LoopProgram sum = gpu_program(g, x.sum({1}), {{OptOp::Group, 1, 8}}), relu = gpu_program(g, y.relu(), {});
  std::vector<const LoopProgram*> stages = {&sum, &relu};
  std::vector<int64_t> args = serial_launch_args(stages);
  ASSERT_EQ(args.size(), 4u);
  EXPECT_EQ(args[0], sum.args[0]);
  EXPECT_EQ(args[2], relu.args[0]);
  std::string cl = render_opencl_serial(g, stages, "k0_k1", 256);
  EXPECT_NE(cl.find("__kernel void k0_k1(__global float* b0, __global const float* b1, __global float* b2, __global "
                    "const float* b3)"),
            std::string::npos)
      << "the stages' outputs are written; memory may be reused between stages, so no restrict\n"
      << cl;
  EXPECT_NE(cl.find("  long lid0 = get_local_id(0);\n"), std::string::npos) << cl;
  EXPECT_NE(cl.find("long gid = t * 32 + lid0 / 8, lid = lid0 % 8;"), std::string::npos) << cl;
  EXPECT_NE(cl.find("bool live = gid < 10;"), std::string::npos) << cl;
  EXPECT_NE(cl.find("[256];"), std::string::npos) << "a copy of the 8 slots per group of the round\n" << cl;
  EXPECT_NE(cl.find("== 0 && live)\n"), std::string::npos) << cl;
  EXPECT_EQ(count(cl, "barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);"), 1u) << cl;
  EXPECT_NE(cl.find("for (long t = lid0; t < 300; t += 256) {"), std::string::npos) << cl;
  EXPECT_EQ(cl.find("get_global_id"), std::string::npos) << cl;
}

TEST(OpenClDialect, HalfBuffersAndDoubles) {
  Graph g;
  std::string half = render_opencl(g, gpu_program(g, Tensor::input(g, "h", DType::F16, {64}).relu(), {}));
  EXPECT_NE(half.find("__global half* restrict b0"), std::string::npos) << half;
  EXPECT_NE(half.find("vload_half("), std::string::npos) << half;
  EXPECT_NE(half.find("vstore_half_rte("), std::string::npos) << half;
  std::string bf16 = render_opencl(g, gpu_program(g, Tensor::input(g, "bf", DType::BF16, {64}).relu(), {}));
  EXPECT_NE(bf16.find("__global ushort* restrict b0"), std::string::npos) << bf16;
  EXPECT_NE(bf16.find("as_float((uint)(b1["), std::string::npos) << bf16;
  std::string f64 = render_opencl(g, gpu_program(g, Tensor::input(g, "d", DType::F64, {64}).relu(), {}));
  EXPECT_EQ(f64.rfind("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#ifdef TGC_POOL\n__kernel void ", 0), 0u) << f64;
  // Without local ranges a kernel runs in groups of kOpenClFlatGroupSize (64): 64 threads need no
  // guard, 100 (padded to 128) do.
  EXPECT_EQ(half.find("return;"), std::string::npos) << half;
  std::string odd = render_opencl(g, gpu_program(g, Tensor::input(g, "o", DType::F32, {100}).relu(), {}));
  EXPECT_NE(odd.find("  if (get_global_id(0) >= 100UL) return;\n  long gid = get_global_id(0);\n"), std::string::npos)
      << odd;
  EXPECT_EQ(half.find("#pragma"), std::string::npos);
}

bool has(const std::vector<uint32_t>& v, uint32_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

TEST(GlslDialect, WorkGroupKernelStructure) {
  Graph g;
  LoopProgram p = gpu_program(g, matmul(g, 8, 64, 96), {{OptOp::Local, 1, 32}, {OptOp::Group, 2, 4}});
  std::string glsl = render_glsl(g, p, {.index_bits = 32});
  EXPECT_EQ(glsl.rfind("#version 450\n", 0), 0u) << glsl;
  EXPECT_NE(glsl.find("layout(local_size_x_id = 0) in;\n"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("layout(std430, set = 0, binding = 0) restrict buffer B0 { float b0[]; };\n"), std::string::npos)
      << glsl;
  EXPECT_NE(glsl.find("binding = 2) restrict readonly buffer B2 { float b2[]; };\n"), std::string::npos) << glsl;
  // Shared memory at file scope, padding threads gone before the kernel body.
  size_t body = glsl.find("void tgc_kernel() {\n");
  ASSERT_NE(body, std::string::npos) << glsl;
  EXPECT_LT(glsl.find("shared float sm_"), body) << glsl;
  EXPECT_NE(glsl.find("  if (tgc_thread() >= " + std::to_string(gpu_global_size(p)) + "u) return;\n"),
            std::string::npos)
      << glsl;
  EXPECT_NE(glsl.find("  int gid = int(tgc_group()), lid = int(gl_LocalInvocationID.x);\n", body), std::string::npos)
      << glsl;
  EXPECT_EQ(count(glsl, "memoryBarrierShared(); barrier();"), 2u) << glsl;
  EXPECT_EQ(glsl.find("int64_t"), std::string::npos) << "32-bit kernels need no Int64: " << glsl;
  std::string spv = glsl_to_spirv(glsl, p.name);
  ASSERT_GE(spv.size(), 20u);
  uint32_t magic;
  std::memcpy(&magic, spv.data(), 4);
  EXPECT_EQ(magic, 0x07230203u);
  EXPECT_FALSE(has(spirv_capabilities(spv), 11)) << "Int64";
}

// An UPCAST by 4 of the contiguous axis reads and writes 4-vectors where the four elements start
// at a multiple of 4; a shifted window (base + 1) and f16 data stay scalar.
TEST(GpuVectorAccess, UpcastBy4IsOneVectorAccess) {
  Graph g;
  Tensor x = Tensor::input(g, "x", DType::F32, {64, 32}), y = Tensor::input(g, "y", DType::F32, {64, 32});
  LoopProgram p = gpu_program(g, x + y, {{OptOp::Upcast, 1, 4}});
  std::string glsl = render_glsl(g, p, {.index_bits = 32}), cl = render_opencl(g, p, {.index_bits = 32});
  EXPECT_NE(glsl.find("binding = 1) restrict readonly buffer B1v { vec4 b1v[]; };"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("binding = 0) restrict buffer B0v { vec4 b0v[]; };"), std::string::npos) << glsl;
  EXPECT_EQ(count(glsl, "vec4 q"), 2u) << glsl;
  EXPECT_EQ(count(glsl, "b0v[("), 1u) << glsl;
  EXPECT_EQ(count(glsl, "b0["), 1u) << "all stores through the vector view (b0[] only declared): " << glsl;
  EXPECT_NO_THROW(glsl_to_spirv(glsl, p.name));
  EXPECT_EQ(count(cl, "((__global const float4*)b"), 2u) << cl;
  EXPECT_EQ(count(cl, "((__global float4*)b0)["), 1u) << cl;

  Tensor shifted = Tensor::input(g, "z", DType::F32, {64, 33}).shrink({{0, 64}, {1, 33}}) + 1.0;
  std::string off = render_glsl(g, gpu_program(g, shifted, {{OptOp::Upcast, 1, 4}}), {.index_bits = 32});
  EXPECT_EQ(off.find("b1v"), std::string::npos) << "x[j + 1] starts off a multiple of 4: " << off;
  EXPECT_EQ(count(off, "b0v[("), 1u) << "the store still starts at one: " << off;
  std::string half = render_glsl(
      g, gpu_program(g, Tensor::input(g, "h", DType::F16, {64}).relu(), {{OptOp::Upcast, 0, 4}}), {.index_bits = 32});
  EXPECT_EQ(half.find("vec4"), std::string::npos) << half;
}

// An UPCAST by 16 is four 4-vectors (base, base + 4, ...); bytes too: a quantized weight's 16
// bytes are four u8vec4 loads instead of sixteen byte loads.
TEST(GpuVectorAccess, UpcastBy16IsFourVectorAccesses) {
  Graph g;
  Tensor b = Tensor::input(g, "b", DType::U8, {64, 32});
  LoopProgram p = gpu_program(g, b.cast(DType::F32) * 2.0, {{OptOp::Upcast, 1, 16}});
  std::string glsl = render_glsl(g, p, {.index_bits = 32});
  EXPECT_EQ(count(glsl, "u8vec4 q"), 4u) << glsl;
  EXPECT_EQ(count(glsl, "b0v[("), 4u) << "four vector stores: " << glsl;
  EXPECT_NE(glsl.find(" / 4 + 3)]"), std::string::npos) << glsl;
  EXPECT_NO_THROW(glsl_to_spirv(glsl, p.name));
}

HostTensor ones(const Shape& shape, DType type = DType::F32) {
  HostTensor t(type, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.set(i, 1.0);
  return t;
}

// qcom (TargetProfile::image_weights): a reduce along which a weight is contiguous is unrolled by
// 4, and a weight every kernel reads only in such fours becomes an image, read a texel at a time.
TEST(ImageWeights, WeightsReadInFoursAreImages) {
  // One row of texels, rows of 4096 (8192 texels), and f16 texels (read as floats too).
  for (auto [k, type] : {std::pair<int64_t, DType>{32, DType::F32}, {1024, DType::F32}, {32, DType::F16}}) {
    Graph g;
    Tensor x = Tensor::input(g, "x", DType::F32, {256, k}), w = Tensor::weight(g, "w", ones({32, k}, type));
    Tensor y = x.matmul(w.cast(DType::F32).transpose());
    Kernel kernel = only_kernel(g, y);
    std::vector<Opt> opts = heuristic_opts(g, kernel, opencl_profile());
    EXPECT_TRUE(std::count(opts.begin(), opts.end(), Opt{OptOp::Unroll, 2, 4})) << opts_str(opts);
    std::vector<Opt> vk = heuristic_opts(g, kernel, vulkan_profile());
    EXPECT_FALSE(std::any_of(vk.begin(), vk.end(), [](const Opt& o) { return o.op == OptOp::Unroll; })) << opts_str(vk);
    LoopProgram p = lower(g, apply_opts(g, kernel, opts, opencl_profile()), {.inner_loop = false});
    int64_t wb = w.uop()->ival(), xb = x.uop()->ival();
    EXPECT_EQ(buffers_read_in_fours(g, p), (std::set<int64_t>{xb, wb}));
    place_image_weights(g, {p});
    EXPECT_TRUE(g.buffer(wb).image);
    EXPECT_FALSE(g.buffer(xb).image) << "only weights";
    std::string cl = render_opencl(g, p, {.index_bits = 32});
    EXPECT_EQ(count(cl, "__read_only image2d_t b"), 2u) << "an argument in the classic and pool signatures\n" << cl;
    EXPECT_NE(cl.find("(__global uchar* tgc_pool, __read_only image2d_t b"), std::string::npos)
        << "images after the pool";
    // With TGC_NO_IMAGES (a device without images) the pool alone, the image a vector view of it.
    EXPECT_NE(cl.find("#if defined(TGC_POOL) && defined(TGC_NO_IMAGES)\n__kernel void " + p.name +
                      "(__global uchar* tgc_pool)\n"),
              std::string::npos)
        << cl;
    std::string view = type == DType::F16 ? "const half* restrict b" : "const float4* restrict b";
    EXPECT_EQ(count(cl, "#ifdef TGC_NO_IMAGES\n  __global " + view), 1u) << cl;
    EXPECT_EQ(count(cl, std::string("float4 q1 = ") + (type == DType::F16 ? "tgc_texel_half(b" : "tgc_texel(b")), 1u)
        << cl;
    EXPECT_EQ(count(cl, "% 4096), (int)("), k == 1024 ? 1u : 0u) << cl;

    // Read one at a time by another kernel: a buffer again.
    LoopProgram scalar = lower(g, only_kernel(g, w + 1.0), {.inner_loop = false});
    place_image_weights(g, {p, scalar});
    EXPECT_FALSE(g.buffer(wb).image);
    EXPECT_EQ(render_opencl(g, p, {.index_bits = 32}).find("image2d_t"), std::string::npos);
  }
}

// A mid-sized reduce (4096 to 16383 outputs, cls's late 1x1 convs): where the work-groups span 32
// outputs, the reduce left after the texel unroll is split over 8 threads of the group, padded to
// a multiple of 8; with narrower groups (16 outputs) it is left alone.
TEST(GpuHeuristic, MidSizedReducesSplitAcrossWideGroups) {
  for (auto [positions, split] : {std::pair<int64_t, bool>{96, true}, {80, false}}) {
    Graph g;
    Tensor x = Tensor::input(g, "x", DType::F32, {200, positions}),
           w = Tensor::weight(g, "w", ones({64, 200}, DType::F32));
    std::vector<Opt> opts = heuristic_opts(g, only_kernel(g, w.matmul(x)), opencl_profile());
    std::vector<Opt> want = {{OptOp::Local, 1, split ? 32 : 16}, {OptOp::Unroll, 2, 4}};
    if (split) want.insert(want.end(), {{OptOp::Padto, 2, 8}, {OptOp::GroupTop, 2, 8}});
    EXPECT_EQ(opts_str(opts), opts_str(want)) << positions;
  }
}

// Under 256 outputs a reduce of 16 or more is split across a work-group (cls's channel means and
// FC layers); with more outputs, from 256 on.
TEST(GpuHeuristic, FewOutputsSplitShortReduces) {
  Graph g;
  auto split = [&](const Tensor& t) {
    std::vector<Opt> opts = heuristic_opts(g, only_kernel(g, t), vulkan_profile());
    return std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.op == OptOp::Group; });
  };
  EXPECT_TRUE(split(Tensor::input(g, "se", DType::F32, {1, 200, 2, 96}).sum({2, 3})));  // 200 outputs over 192
  EXPECT_TRUE(split(Tensor::input(g, "fc", DType::F32, {1, 88}).matmul(Tensor::input(g, "w", DType::F32, {88, 22}))));
  EXPECT_FALSE(split(Tensor::input(g, "rows", DType::F32, {1024, 192}).sum({1})));  // 1024 outputs over 192
  EXPECT_FALSE(split(Tensor::input(g, "short", DType::F32, {64, 8}).sum({1})));     // a reduce of 8
}

// An LLM's decode step: a matrix-vector product over a run-time token count gets a variant for a
// few tokens whose reduce is split across a work-group, enough threads to fill the GPU (a warp at
// least, 256 at most), consecutive threads on consecutive 16 bytes of weights (4 f32), each
// thread on 4 rows (the activations it loads serve all four), 8 where groups of 8 rows still give
// each SM four work-groups (8192 and 32000 rows on an H200's profile); at about a thousand tokens the
// heuristic's own schedule stays. Kernels without a reduce whose token axis is outermost get none.
TEST(GpuHeuristic, FewTokensSplitMatrixVectorReduces) {
  // rows, rows per thread, threads per row
  for (auto [rows, upcast, group] :
       {std::tuple<int64_t, int64_t, int64_t>{2048, 4, 256}, {8192, 8, 256}, {32000, 8, 128}}) {
    Graph g;
    const UOp* n = g.declare_var("n_tokens", 1, 512);
    Tensor x = Tensor::input(g, "x", DType::F32, {512, 2048});
    g.set_var_axis(x.uop(), 0, n);
    Tensor w = Tensor::weight(g, "w", ones({rows, 2048}, DType::F32));
    Tensor y = x.matmul(w.permute({1, 0}));
    g.set_var_axis(y.uop(), 0, n);
    Kernel k = only_kernel(g, y);
    TargetProfile cuda = cuda_profile();
    std::vector<Opt> many = heuristic_opts(g, k, cuda);
    SizeVariant few = few_tokens_variant(g, k, cuda, many);
    ASSERT_FALSE(few.opts.empty()) << rows;
    EXPECT_EQ(few.var, n);
    EXPECT_EQ(few.until, kFewTokens);
    EXPECT_EQ(opts_str(few.opts),
              opts_str({{OptOp::Upcast, 1, upcast}, {OptOp::Unroll, 2, 4}, {OptOp::Group, 2, group}}))
        << rows;
    Tensor e = Tensor::input(g, "e", DType::F32, {512, 64}).relu();
    g.set_var_axis(e.uop(), 0, n);
    Kernel elementwise = only_kernel(g, e);
    EXPECT_TRUE(few_tokens_variant(g, elementwise, cuda, heuristic_opts(g, elementwise, cuda)).opts.empty());
  }
}

// The model's signed integer / and % divide magnitudes in GLSL, which leaves negative operands
// undefined (NVIDIA computed 7 % -3 as unsigned); unsigned ones and OpenCL C keep the operators.
TEST(GlslDialect, SignedIntegerDivisionTakesCsSigns) {
  Graph g;
  Tensor x = Tensor::input(g, "x", DType::I32, {8}), y = Tensor::input(g, "y", DType::I32, {8});
  LoopProgram p = gpu_program(g, x.fmod(y) + x / y, {});
  std::string glsl = render_glsl(g, p, {.index_bits = 32});
  EXPECT_GE(count(glsl, "abs(int("), 4u) << glsl;
  EXPECT_NO_THROW(glsl_to_spirv(glsl, p.name));
  EXPECT_EQ(render_opencl(g, p).find("abs("), std::string::npos);
  Tensor u = Tensor::input(g, "u", DType::U32, {8});
  EXPECT_EQ(render_glsl(g, gpu_program(g, u.fmod(u + 1.0), {}), {.index_bits = 32}).find("abs("), std::string::npos);
}

// f16 in 16-bit storage with fp32 math: the module needs StorageBuffer16BitAccess, not Float16.
TEST(GlslDialect, HalfStorageFloatMath) {
  Graph g;
  LoopProgram p = gpu_program(g, (Tensor::input(g, "h", DType::F16, {64}) * 2.0).relu(), {});
  std::string glsl = render_glsl(g, p, {.index_bits = 32});
  EXPECT_NE(glsl.find("restrict buffer B0 { float16_t b0[]; };"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("= float16_t("), std::string::npos) << glsl;
  std::vector<uint32_t> caps = spirv_capabilities(glsl_to_spirv(glsl, p.name));
  EXPECT_TRUE(has(caps, 4433)) << "StorageBuffer16BitAccess";
  EXPECT_FALSE(has(caps, 9)) << "Float16";
  std::string bf16 =
      render_glsl(g, gpu_program(g, Tensor::input(g, "bf", DType::BF16, {64}).relu(), {}), {.index_bits = 32});
  EXPECT_NE(bf16.find("{ uint16_t b0[]; }"), std::string::npos) << bf16;
  EXPECT_NO_THROW(glsl_to_spirv(bf16, "bf16"));
  std::string f64 =
      render_glsl(g, gpu_program(g, Tensor::input(g, "d", DType::F64, {64}).relu(), {}), {.index_bits = 32});
  EXPECT_TRUE(has(spirv_capabilities(glsl_to_spirv(f64, "f64")), 10)) << "Float64";
}

// --precision=fp16 on a target with f16 arithmetic: the kernel's one kernel after compute_in_half.
LoopProgram half_math_program(Graph& g, const Tensor& out, const std::vector<Opt>& opts) {
  Schedule s = schedule(g, {out.uop()});
  EXPECT_EQ(s.kernels.size(), 1u);
  compute_in_half(g, s);
  return lower(g, apply_opts(g, s.kernels.at(0), opts, opencl_profile()), {.inner_loop = false});
}

// f16 arithmetic: float16_t registers (Float16), f16vec4 accesses; sums still accumulate in float.
TEST(GlslDialect, HalfMathInFloat16Registers) {
  Graph g;
  Tensor h = Tensor::input(g, "h", DType::F16, {64});
  LoopProgram p = half_math_program(g, (h * 2.0 + 1.0).relu(), {{OptOp::Upcast, 0, 4}});
  ASSERT_TRUE(computes_in_half(p));
  std::string glsl = render_glsl(g, p, {.index_bits = 32});
  EXPECT_NE(glsl.find("f16vec4 q0 = b1v[("), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("b0v[("), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("float16_t(2.0)"), std::string::npos) << glsl;
  EXPECT_EQ(glsl.find("float v"), std::string::npos) << "no f32 registers: " << glsl;
  std::vector<uint32_t> caps = spirv_capabilities(glsl_to_spirv(glsl, p.name));
  EXPECT_TRUE(has(caps, 9)) << "Float16";

  LoopProgram sum = half_math_program(g, (Tensor::input(g, "a", DType::F16, {8, 64}) * h).sum({1}), {});
  ASSERT_TRUE(computes_in_half(sum)) << "the products";
  std::string reduce = render_glsl(g, sum, {.index_bits = 32});
  EXPECT_NE(reduce.find(" = float(v"), std::string::npos) << "each f16 product widened: " << reduce;
  EXPECT_GE(count(reduce, "  float v"), 2u) << "an f32 accumulator: " << reduce;
  EXPECT_NO_THROW(glsl_to_spirv(reduce, sum.name));
}

// One OpenCL C source for every device: f16 arithmetic under cl_khr_fp16, float without it.
TEST(OpenClDialect, HalfMathWhereTheDeviceHasFp16) {
  Graph g;
  Tensor h = Tensor::input(g, "h", DType::F16, {64});
  std::string cl = render_opencl(g, half_math_program(g, (h * 2.0 + 1.0).relu(), {}));
  EXPECT_EQ(cl.rfind("#ifdef cl_khr_fp16\n#pragma OPENCL EXTENSION cl_khr_fp16 : enable\ntypedef half tgc_half;\n", 0),
            0u)
      << cl;
  EXPECT_NE(cl.find("#else\ntypedef float tgc_half;\n"), std::string::npos) << cl;
  EXPECT_NE(cl.find("tgc_half v"), std::string::npos) << cl;
  EXPECT_NE(cl.find("tgc_load_half("), std::string::npos) << cl;
  EXPECT_NE(cl.find("tgc_store_half("), std::string::npos) << cl;
  EXPECT_NE(cl.find("(tgc_half)(2.0f)"), std::string::npos) << cl;
  // Without f16 arithmetic in the kernel, nothing changes.
  std::string plain = render_opencl(g, gpu_program(g, h.relu(), {}));
  EXPECT_EQ(plain.find("tgc_half"), std::string::npos) << plain;
}

// Run-time dims come from the vars buffer as the low 32-bit word of each i64 slot, so the kernel
// needs no Int64 (and a recorded command buffer serves any of their values).
TEST(GlslDialect, RunTimeDimsAreTheVarsBuffersLowWords) {
  Graph g;
  const UOp* n = g.declare_var("n", 1, 64);
  g.declare_var("m", 1, 8);
  Tensor y = Tensor::input(g, "x", DType::F32, {64, 16}).relu();
  g.set_var_axis(y.uop(), 0, n);
  LoopProgram p = gpu_program(g, y, {{OptOp::Local, 1, 16}});
  std::string glsl = render_glsl(g, p, {.index_bits = 32});
  EXPECT_NE(glsl.find("readonly buffer TgcVars { int tgc_vars[]; };\n"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find(">= int(tgc_vars[0])) return;"), std::string::npos) << glsl;
  EXPECT_EQ(glsl.find("int64_t"), std::string::npos) << glsl;
  EXPECT_EQ(glsl.find("push_constant"), std::string::npos) << glsl;
  std::vector<uint32_t> caps = spirv_capabilities(glsl_to_spirv(glsl, p.name));
  EXPECT_FALSE(has(caps, 11)) << "Int64";
  // OpenCL C still reads the vars buffer.
  EXPECT_EQ(render_opencl(g, p, {.index_bits = 32}).find("tgc_vars"), std::string::npos);
}

// A group reduce whose GROUP range is the innermost local range: subgroup arithmetic where the
// subgroup size divides the 16 threads folded together, shared memory otherwise; without the
// option (or in OpenCL C) only shared memory.
TEST(GlslDialect, GroupReducesUseSubgroupArithmetic) {
  Graph g;
  LoopProgram p = gpu_program(g, matmul(g, 8, 64, 96), {{OptOp::Group, 2, 16}});
  std::string glsl = render_glsl(g, p, {.index_bits = 32, .subgroups = true});
  EXPECT_NE(glsl.find("#extension GL_KHR_shader_subgroup_arithmetic : require\n"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("if (16u % gl_SubgroupSize == 0u) {"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find(" = subgroupAdd("), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("if (gl_SubgroupInvocationID == 0u) sm_"), std::string::npos) << glsl;
  EXPECT_NE(glsl.find("} else\n"), std::string::npos) << "the shared-memory fold stays: " << glsl;
  std::vector<uint32_t> caps = spirv_capabilities(glsl_to_spirv(glsl, p.name));
  EXPECT_TRUE(has(caps, 63)) << "GroupNonUniformArithmetic";
  std::string plain = render_glsl(g, p, {.index_bits = 32});
  EXPECT_EQ(plain.find("subgroup"), std::string::npos) << plain;
  EXPECT_FALSE(has(spirv_capabilities(glsl_to_spirv(plain, p.name)), 63));
  EXPECT_EQ(render_opencl(g, p).find("subgroup"), std::string::npos);
  // 64-bit values stay in shared memory (subgroup reduces of them need more device features).
  Graph g64;
  Tensor a = Tensor::input(g64, "a", DType::I64, {8, 64});
  std::string wide =
      render_glsl(g64, gpu_program(g64, a.sum({1}), {{OptOp::Group, 1, 16}}), {.index_bits = 32, .subgroups = true});
  EXPECT_EQ(wide.find("subgroupAdd"), std::string::npos) << wide;
}

TEST(GlslDialect, CompileErrorsNameTheKernel) {
  try {
    glsl_to_spirv("#version 450\nvoid main() { undeclared_thing = 1; }\n", "k7");
    FAIL() << "no error";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("kernel k7"), std::string::npos) << m;
    EXPECT_NE(m.find("undeclared_thing"), std::string::npos) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << "one line: " << m;
  }
}

// A dialect spelled unlike OpenCL C, with shared memory at file scope as GLSL wants it: the
// renderer must take every language-specific word from the dialect.
class ToyDialect : public CDialect {
 public:
  std::string reg_type(DType t) const override { return is_float(t) ? "real" : t == DType::Bool ? "flag" : "whole"; }
  std::string mem_type(DType t) const override { return "stored_" + reg_type(t); }
  std::string prelude(const CKernelHead& k) const override {
    return "#toy local_size=" + std::to_string(k.local_size) + "\n";
  }
  std::string signature(const CKernelHead& k) const override { return "kernel " + k.name + "()"; }
  std::string global_id() const override { return "GID"; }
  std::string group_id() const override { return "WGID"; }
  std::string local_id() const override { return "LID"; }
  std::string shared_array(const std::string& type, const std::string& name, int64_t count) const override {
    return "common " + type + " " + name + "[" + std::to_string(count) + "];";
  }
  bool shared_at_file_scope() const override { return true; }
  std::string barrier() const override { return "sync()"; }
  std::string cast(const std::string& type, const std::string& x) const override { return type + "(" + x + ")"; }
  std::string zero(const std::string& type) const override { return type + "(0)"; }
  std::string float_suffix(DType) const override { return ""; }
  std::string int_suffix(DType) const override { return ""; }
  std::string nan() const override { return "NOT_A_NUMBER"; }
  std::string infinity() const override { return "INF"; }
  std::string int_min(DType) const override { return "LOWEST"; }
  std::string function(CFunction f) const override { return "fn" + std::to_string(int(f)); }
  std::string bitcast(DType, DType to, const std::string& x) const override {
    return "reinterpret_" + reg_type(to) + "(" + x + ")";
  }
  std::string load_half(DType, const std::string& b, const std::string& i) const override {
    return "unpack(" + b + ", " + i + ")";
  }
  std::string store_half(DType, const std::string& b, const std::string& i, const std::string& v) const override {
    return "pack(" + b + ", " + i + ", " + v + ")";
  }
};

TEST(CRenderer, TakesEveryLanguageWordFromTheDialect) {
  Graph g;
  LoopProgram p = gpu_program(g, matmul(g, 8, 64, 96).exp(), {{OptOp::Local, 1, 32}, {OptOp::Group, 2, 4}});
  std::string toy = render_c(g, lower_gpu(g, p), ToyDialect());
  for (const char* opencl :
       {"__", "get_", "long", "float", "barrier", "fmax", "exp2", "(float)", "INFINITY", "restrict"})
    EXPECT_EQ(toy.find(opencl), std::string::npos) << opencl << " in\n" << toy;
  std::string file_scope = "#toy local_size=128\ncommon real sm_";
  EXPECT_EQ(toy.rfind(file_scope, 0), 0u) << toy;
  EXPECT_NE(toy.find("[128];\nkernel " + p.name + "() {\n  whole gid = WGID, lid = LID;\n"), std::string::npos) << toy;
  EXPECT_EQ(count(toy, "sync();"), 2u) << toy;
}

// LANES updates are emitted as vectors (codegen/llvm/lane_vectors.h): a matrix-vector product
// over an f16 weight, transposed (the reduce is the contiguous axis), gets one vector
// multiply-add per group of lanes, f16 widened as a vector, and a vector reduction after the loop;
// with four tokens tiled (the large-size variant's tile), the weight vector is loaded once.
TEST(CpuKernel, LaneSumsAreVectors) {
  for (int64_t tokens : {1, 4}) {
    Graph g;
    Tensor w = Tensor::input(g, "w", DType::F16, {40, 256}).cast(DType::F32);
    Tensor out = Tensor::input(g, "x", DType::F32, {tokens, 256}).matmul(w.permute({1, 0}));
    Kernel k = only_kernel(g, out);
    std::vector<Opt> opts = {{OptOp::Lanes, int(k.global_ranges.size()), 64}};
    if (tokens > 1) opts.push_back({OptOp::Upcast, 0, 4});
    LoopProgram p = lower(g, apply_opts(g, k, opts, cpu_profile([](const std::string&) { return true; }, false)),
                          {.inner_loop = true});
    ASSERT_TRUE(p.lane_sums);
    std::string ir = cpu_ir(g, p, cpu_profile([](const std::string&) { return true; }, false));
    SCOPED_TRACE("tokens=" + std::to_string(tokens));
    EXPECT_EQ(count(ir, "call reassoc contract <64 x float> @llvm.fmuladd.v64f32"), size_t(tokens)) << ir;
    EXPECT_EQ(count(ir, "fpext <64 x half>"), 1u) << ir;
    EXPECT_EQ(count(ir, "call reassoc float @llvm.vector.reduce.fadd.v64f32"), size_t(tokens)) << ir;
  }
}

// A laned reduce over a weight larger than L2 prefetches 4 KB ahead on it, a line per 64 bytes
// of its stride (two for 64 f16 lanes); the vector it multiplies, and a weight that fits in L2,
// get none.
TEST(CpuKernel, StreamsPastL2ArePrefetched) {
  auto profile = cpu_profile([](const std::string&) { return true; }, false);
  for (int64_t rows : {40, 4096}) {
    Graph g;
    Tensor w = Tensor::input(g, "w", DType::F16, {rows, 256}).cast(DType::F32);
    Tensor out = Tensor::input(g, "x", DType::F32, {1, 256}).matmul(w.permute({1, 0}));
    Kernel k = only_kernel(g, out);
    LoopProgram p = lower(g, apply_opts(g, k, {{OptOp::Lanes, int(k.global_ranges.size()), 64}}, profile),
                          {.inner_loop = true, .streams = true});
    std::string ir = cpu_ir(g, p, profile);
    SCOPED_TRACE("rows=" + std::to_string(rows));
    bool past_l2 = rows * 256 * 2 > profile.l2_bytes;
    EXPECT_EQ(count(ir, "call void @llvm.prefetch"), past_l2 ? 2u : 0u) << ir;
    if (past_l2) EXPECT_EQ(count(ir, "i64 4160"), 1u) << "the second line, 4 KB + 64 B ahead\n" << ir;
  }
}

// Only loops that hold copies (LANES, register tiles) are kept from the loop vectorizer: a
// softmax with LANES on its max leaves its sum of exponentials and its output loop to it (all
// three kept scalar ran 9x slower than no opts at all).
TEST(CpuKernel, OnlyLoopsOfCopiesSkipTheLoopVectorizer) {
  Graph g;
  Tensor out = Tensor::input(g, "x", DType::F32, {8, 256}).softmax(-1);
  Kernel k = only_kernel(g, out);
  auto profile = cpu_profile([](const std::string&) { return true; }, false);
  LoopProgram p = lower(g, apply_opts(g, k, {{OptOp::Lanes, 2, 64}}, profile), {.inner_loop = true});
  ASSERT_TRUE(p.lanes_expanded);
  std::string ir = cpu_ir(g, p, profile);
  // The work-item loop and the laned max loop.
  EXPECT_EQ(count(ir, "!llvm.loop"), 2u) << ir;
}

// A tile of 32 rows updated through DOT4 (an int8 matmul over row-interleaved words) becomes
// one vector of 32 i32 lanes (two registers) per DOT4: vpdpbusd where the CPU has AVX512-VNNI, else plain
// vector multiplies of the bytes (correct everywhere; CompiledOps.dot4_rows checks the values).
TEST(CpuKernel, Dot4RowTilesAreVectors) {
  for (bool vnni : {true, false}) {
    Graph g;
    Tensor w = Tensor::input(g, "w", DType::U32, {8, 32}), x = Tensor::input(g, "x", DType::I32, {8, 1});
    Tensor zero = Tensor::full(g, {1, 1}, 0, DType::I32);
    Tensor out = Tensor::dot4(w, x, zero).cast(DType::F32).sum({0});
    Kernel k = only_kernel(g, out);
    auto profile =
        cpu_profile([&](const std::string& f) { return vnni || f.find("vnni") == std::string::npos; }, false);
    LoopProgram p = lower(g, apply_opts(g, k, {{OptOp::Upcast, 0, 32}}, profile), {.inner_loop = true});
    std::string ir = cpu_ir(g, p, profile);
    SCOPED_TRACE(vnni ? "avx512vnni" : "no vnni");
    EXPECT_EQ(count(ir, "call <16 x i32> @llvm.x86.avx512.vpdpbusd.512"), vnni ? 2u : 0u) << ir;
    EXPECT_EQ(count(ir, "mul <128 x i32>"), vnni ? 0u : 1u) << ir;
  }
}

// Lanes at a stride: the tile of 32 rows (contiguous words of w) outside a tile of 4 columns
// whose words are not contiguous (x's columns are 8 words apart), so neighbouring updates are no
// vector; every 4th is: 4 groups of 32 rows, two vpdpbusd each (an int8 conv's output channels
// outside its spatial tile).
TEST(CpuKernel, Dot4LanesAtAStride) {
  Graph g;
  Tensor w = Tensor::input(g, "w", DType::U32, {8, 32, 1});
  Tensor x = Tensor::input(g, "x", DType::I32, {4, 8}).permute({1, 0}).reshape({8, 1, 4});
  Tensor out = Tensor::dot4(w, x, Tensor::full(g, {1, 1, 1}, 0, DType::I32)).cast(DType::F32).sum({0});
  Kernel k = only_kernel(g, out);
  auto profile = cpu_profile([](const std::string&) { return true; }, false);
  LoopProgram p =
      lower(g, apply_opts(g, k, {{OptOp::Upcast, 0, 32}, {OptOp::Upcast, 1, 4}}, profile), {.inner_loop = true});
  std::string ir = cpu_ir(g, p, profile);
  EXPECT_EQ(count(ir, "call <16 x i32> @llvm.x86.avx512.vpdpbusd.512"), 8u) << ir;
}

// A CPU launch's work items: the outer dims times chunks of the inner loop, chunked so that every
// thread gets several items even where an outer dim is a run-time size at its smallest (a
// one-token decode step: the bound, 512 tokens, would have left it one item, all 32000 rows).
TEST(CpuKernel, WorkSplitCountsRunTimeDimsAtTheirSmallest) {
  Graph g;
  LoopProgram p;
  p.globals = {g.make(Op::Range, DType::Index, {g.declare_var("n", 1, 512)}, RangeArg{0, RangeKind::Global}),
               g.make(Op::Range, DType::Index, {g.cint(32000)}, RangeArg{1, RangeKind::Global})};
  p.inner = p.globals[1];
  CpuWorkSplit s = cpu_work_split(p, 64);
  EXPECT_EQ(s.chunk, 500);
  EXPECT_EQ(s.items, 512 * 64) << "items at the bound: the runtime runs n/512 of them";
  p.globals[0] = g.make(Op::Range, DType::Index, {g.cint(512)}, RangeArg{0, RangeKind::Global});
  EXPECT_EQ(cpu_work_split(p, 64).chunk, 32000) << "512 fixed outer positions are items enough";
}

// Loads read the function's one pointer argument at the LOAD's (constant) index; math ops
// either go through LLVM's intrinsics or, for a target without them, are refused.
class TestHooks : public LlvmExprHooks {
 public:
  TestHooks(llvm::IRBuilder<>& b, llvm::Value* buffer, bool has_math) : b_(b), buffer_(buffer), has_math_(has_math) {}
  LlvmExprEmitter* emitter = nullptr;
  llvm::Value* load(const UOp* u) override {
    llvm::Type* t = llvm_type(b_.getContext(), u->dtype, true);
    return b_.CreateLoad(t, b_.CreateGEP(t, buffer_, emitter->value(u->src[1])));
  }
  llvm::Value* accumulator(const UOp*) override { return nullptr; }  // no reduces here
  llvm::Value* math(Op op, DType t, llvm::Value* x) override {
    return has_math_ ? emitter->intrinsic_math(op, t, x) : nullptr;
  }

 private:
  llvm::IRBuilder<>& b_;
  llvm::Value* buffer_;
  bool has_math_;
};

struct EmitterFixture {
  llvm::LLVMContext ctx;
  llvm::Module mod{"m", ctx};
  llvm::IRBuilder<> b{ctx};
  llvm::Function* fn;
  TestHooks hooks;
  LlvmExprEmitter e;

  EmitterFixture(DType ret, bool has_math)
      : fn(llvm::Function::Create(
            llvm::FunctionType::get(llvm_type(ctx, ret, false), {llvm::PointerType::get(ctx, 0)}, false),
            llvm::Function::ExternalLinkage, "f", mod)),
        hooks(b, fn->getArg(0), has_math),
        e(b, hooks, "k7") {
    hooks.emitter = &e;
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn));
  }
  llvm::Value* emit(const std::vector<const UOp*>& in_order) {
    llvm::Value* v = nullptr;
    for (const UOp* u : in_order) e.set(u, v = e.compute(u));
    return v;
  }
  std::string verify() {
    std::string err;
    llvm::raw_string_ostream os(err);
    return llvm::verifyModule(mod, &os) ? err : "";
  }
};

TEST(LlvmExprEmitter, EmitsAVerifiedFunction) {
  Graph g;
  const UOp* buf = Tensor::input(g, "x", DType::F32, {4}).uop();
  const UOp* x = g.make(Op::Load, DType::F32, {buf, g.cint(1)});
  const UOp* e2 = g.make(Op::Exp2, DType::F32, {x});
  const UOp* s = g.make(Op::Add, DType::F32, {g.make(Op::Mul, DType::F32, {x, e2}), g.cfloat(1, DType::F32)});
  const UOp* i = g.make(Op::Cast, DType::I32, {s});
  const UOp* q = g.make(Op::IDiv, DType::I32, {i, g.cint(3, DType::I32)});
  const UOp* lt = g.make(Op::CmpLt, DType::Bool, {q, g.cint(5, DType::I32)});
  const UOp* root = g.make(Op::Sqrt, DType::F32, {g.make(Op::Max, DType::F32, {x, g.cfloat(0, DType::F32)})});
  const UOp* w = g.make(Op::Where, DType::F32, {lt, root, g.make(Op::Log2, DType::F32, {e2})});
  const UOp* d = g.make(Op::Exp2, DType::F64, {g.make(Op::Cast, DType::F64, {w})});

  EmitterFixture f(DType::F64, true);
  llvm::Value* out = f.emit({x, e2, s->src[0], s, i, q, lt, root->src[0], root, w->src[2], w, d->src[0], d});
  f.b.CreateRet(out);
  EXPECT_EQ(f.verify(), "");
  EXPECT_EQ(f.mod.getFunction("llvm.exp2.f32"), nullptr) << "f32 2^x is the polynomial";
  EXPECT_NE(f.mod.getFunction("llvm.exp2.f64"), nullptr);
  EXPECT_NE(f.mod.getFunction("llvm.log2.f32"), nullptr);
  EXPECT_NE(f.mod.getFunction("llvm.sqrt.f32"), nullptr);
}

TEST(LlvmExprEmitter, MathTheTargetCannotEmitIsAnError) {
  Graph g;
  const UOp* x = g.make(Op::Load, DType::F32, {Tensor::input(g, "x", DType::F32, {4}).uop(), g.cint(0)});
  EmitterFixture f(DType::F32, false);
  f.emit({x});
  try {
    f.e.compute(g.make(Op::Log2, DType::F32, {x}));
    ADD_FAILURE() << "a refused LOG2 was emitted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("kernel k7: this target cannot emit LOG2 of f32"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(f.e.value(g.make(Op::Neg, DType::F32, {x})), Error) << "never computed";
}

TargetProfile sm90() {
  TargetProfile t = cuda_profile();
  t.gpu_arch = "sm_90";
  return t;
}

Tensor half_matmul(Graph& g, int64_t m, int64_t k, int64_t n) {
  return Tensor::input(g, "a", DType::F16, {m, k}).matmul(Tensor::input(g, "b", DType::F16, {k, n}));
}

// A matrix product of f16 becomes WMMA tiles on CUDA: the heuristic picks TC, and the PTX loads
// fragments, multiplies them on tensor cores, and finishes the tile from shared memory.
TEST(TensorCores, HalfMatmulRunsAsWmmaTiles) {
  Graph g;
  Kernel k = only_kernel(g, half_matmul(g, 32, 64, 48) * 2.0);
  std::optional<TensorCorePlan> plan = tensor_core_plan(g, k);
  ASSERT_TRUE(plan);
  EXPECT_EQ(range_extent(plan->m), 32);
  EXPECT_EQ(range_extent(plan->n), 48);
  EXPECT_EQ(range_extent(plan->k), 64);
  EXPECT_TRUE(plan->a_row && plan->b_row);
  EXPECT_EQ(plan->lda, 64);
  EXPECT_EQ(plan->ldb, 48);
  std::vector<Opt> opts = heuristic_opts(g, k, sm90());
  ASSERT_EQ(opts, (std::vector<Opt>{{OptOp::Tc, 0, 0}}));
  Kernel tc = apply_opts(g, k, opts, sm90());
  EXPECT_NE(tuning_key(g, tc), tuning_key(g, k)) << "BEAM times TC beside the plain kernel";
  LoopProgram p = lower(g, tc, {.inner_loop = false});
  // 2 x 3 fragments of 16x16: too few for more than one per warp; 6 warps, 2 per block.
  ASSERT_TRUE(p.tensor_cores);
  EXPECT_EQ(p.tensor_cores->tiles, (TensorCoreTiles{1, 1, 2}));
  EXPECT_EQ(ptx_block_size(p), 64);
  EXPECT_EQ(ptx_grid_threads(p), 6 * 32);
  std::string ptx = render_ptx(g, p, {.sm = "sm_90"});
  EXPECT_GT(count(ptx, "wmma.load.a.sync.aligned.row.m16n16k16.global.f16"), 0u) << ptx;
  EXPECT_GT(count(ptx, "wmma.mma.sync.aligned.row.row.m16n16k16.f32.f32"), 0u);
  EXPECT_EQ(count(ptx, "wmma.store.d.sync.aligned.row.m16n16k16.shared.f32"), 1u);
  // 1024 x 1024 outputs: 4 x 4 fragments per warp would leave 256 warps, 2 x 4 leaves 512;
  // 2048 x 2048: 4 x 4 leaves 1024. Blocks of 2 x 2 such warps divide both, so they are staged
  // through shared memory.
  EXPECT_EQ(tensor_core_plan(g, only_kernel(g, half_matmul(g, 1024, 64, 1024)))->tiles, (TensorCoreTiles{2, 4, 4, 64}));
  EXPECT_EQ(tensor_core_plan(g, only_kernel(g, half_matmul(g, 2048, 64, 2048)))->tiles, (TensorCoreTiles{4, 4, 4, 32}));
  LoopProgram staged =
      lower(g, apply_opts(g, only_kernel(g, half_matmul(g, 256, 64, 256) + 1.0), {{OptOp::Tc, 0, 0}}, sm90()),
            {.inner_loop = false});
  ASSERT_TRUE(staged.tensor_cores);
  ASSERT_EQ(staged.tensor_cores->tiles.staged, 64);
  EXPECT_EQ(ptx_block_size(staged), 128);
  std::string sptx = render_ptx(g, staged, {.sm = "sm_90"});
  EXPECT_GT(count(sptx, "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16"), 0u) << sptx;
  EXPECT_GT(count(sptx, "bar.sync"), 0u);
}

// f32 activations times a weight of narrower values (f16 here, a GGUF's dequantized blocks in an
// LLM): both factors are computed per element, rounded to f16 in shared memory (B column by column,
// its reduce contiguous) and multiplied on tensor cores; f32 times f32 stays off them.
TEST(TensorCores, ConvertedFactorsOfF32TimesNarrowWeights) {
  Graph g;
  Tensor x = Tensor::input(g, "x", DType::F32, {256, 128});
  std::shared_ptr<const Bytes> bytes = Bytes::own(std::vector<uint8_t>(256 * 128 * 2));
  Tensor w = Tensor::weight(g, "w", DType::F16, {256, 128}, bytes).cast(DType::F32);
  Kernel k = only_kernel(g, x.matmul(w.transpose()));
  std::optional<TensorCorePlan> plan = tensor_core_plan(g, k);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->convert);
  EXPECT_EQ(plan->type, DType::F16);
  EXPECT_TRUE(plan->a_row);
  EXPECT_FALSE(plan->b_row);
  EXPECT_GT(plan->tiles.staged, 0);
  ASSERT_EQ(heuristic_opts(g, k, sm90()), (std::vector<Opt>{{OptOp::Tc, 0, 0}}));
  LoopProgram p = lower(g, apply_opts(g, k, {{OptOp::Tc, 0, 0}}, sm90()), {.inner_loop = false});
  std::string ptx = render_ptx(g, p, {.sm = "sm_90"});
  EXPECT_GT(count(ptx, "cvt.rn.f16.f32"), 0u) << ptx;
  EXPECT_GT(count(ptx, "wmma.load.b.sync.aligned.col.m16n16k16.shared.f16"), 0u);
  EXPECT_GT(count(ptx, "wmma.mma.sync.aligned.row.col.m16n16k16.f32.f32"), 0u);
  Tensor f32 = Tensor::input(g, "y", DType::F32, {256, 128});
  std::optional<TensorCorePlan> plain = tensor_core_plan(g, only_kernel(g, x.matmul(f32.transpose())));
  ASSERT_TRUE(plain);
  EXPECT_FALSE(plain->convert) << "f32 operands are tf32's, with --precision=tf32 only";
}

TEST(TensorCores, OnlyTilesOfHalfMatricesOnTargetsWithTensorCores) {
  Graph g;
  std::string why;
  Tensor rows = (Tensor::input(g, "a", DType::F32, {32, 64}) * Tensor::input(g, "b", DType::F32, {32, 64})).sum({1});
  EXPECT_FALSE(tensor_core_plan(g, only_kernel(g, rows), &why));
  EXPECT_EQ(why, "no pair of output ranges along which the two operands are 16x16 tiles WMMA can load");
  EXPECT_FALSE(tensor_core_plan(g, only_kernel(g, half_matmul(g, 24, 64, 48)), &why)) << "24 rows";
  EXPECT_FALSE(tensor_core_plan(g, only_kernel(g, half_matmul(g, 32, 40, 48)), &why)) << "a sum of 40";
  EXPECT_EQ(why, "the reduce is not a multiple of 16 long");
  Kernel k = only_kernel(g, half_matmul(g, 32, 64, 48));
  EXPECT_THROW(apply_opts(g, k, {{OptOp::Tc, 0, 0}}, opencl_profile()), Error);
  TargetProfile volta = sm90(), pascal = sm90();
  volta.gpu_arch = "sm_70", pascal.gpu_arch = "sm_61";
  EXPECT_TRUE(apply_opts(g, k, {{OptOp::Tc, 0, 0}}, volta).tensor_cores);
  EXPECT_THROW(apply_opts(g, k, {{OptOp::Tc, 0, 0}}, pascal), Error);
  EXPECT_THROW(apply_opts(g, k, {{OptOp::Tc, 0, 0}, {OptOp::Upcast, 0, 2}}, volta), Error);
  EXPECT_EQ(parse_opts("TC(0,0)"), (std::vector<Opt>{{OptOp::Tc, 0, 0}}));
}

// --target=cuda:sm_90a: staged f16 and bf16 tiles multiply through Hopper's wgmma (m64nBNk16) from
// shared memory that cp.async fills ahead of them, swizzled as wgmma reads it; sm_90 keeps WMMA.
TEST(TensorCores, WarpgroupMmaOnSm90a) {
  Graph g;
  const std::vector<Opt> tc{{OptOp::Tc, 0, 0}};
  LoopProgram p =
      lower(g, apply_opts(g, only_kernel(g, half_matmul(g, 1024, 256, 1024) + 1.0), tc, sm90()), {.inner_loop = false});
  ASSERT_TRUE(p.tensor_cores);
  ASSERT_EQ(p.tensor_cores->tiles, (TensorCoreTiles{2, 4, 4, 64})) << "blocks of 64 x 128";
  std::string ptx = render_ptx(g, p, {.sm = "sm_90a"});
  EXPECT_GT(count(ptx, ".target sm_90a"), 0u);
  EXPECT_GT(count(ptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16"), 0u) << ptx;
  EXPECT_GT(count(ptx, "cp.async.cg.shared.global"), 0u);
  EXPECT_GT(count(ptx, "fence.proxy.async.shared::cta"), 0u);
  EXPECT_EQ(count(ptx, "wmma."), 0u);
  EXPECT_GT(count(render_ptx(g, p, {.sm = "sm_90"}), "wmma.load.a.sync.aligned.row.m16n16k16.shared.f16"), 0u);
  Tensor a = Tensor::input(g, "a", DType::BF16, {1024, 256}), b = Tensor::input(g, "b", DType::BF16, {256, 1024});
  std::string bptx = render_ptx(
      g, lower(g, apply_opts(g, only_kernel(g, a.matmul(b)), tc, sm90()), {.inner_loop = false}), {.sm = "sm_90a"});
  EXPECT_GT(count(bptx, "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16"), 0u) << bptx;
  // Blocks of 32 x 32 (16 x 16 per warp) are too small for m64: WMMA.
  LoopProgram small =
      lower(g, apply_opts(g, only_kernel(g, half_matmul(g, 256, 64, 256)), tc, sm90()), {.inner_loop = false});
  EXPECT_EQ(count(render_ptx(g, small, {.sm = "sm_90a"}), "wgmma.mma_async"), 0u);
}

// A large f32 matrix product without tf32: TC(0,1), register tiles of the CUDA cores from shared
// memory (8 x 8 per thread where enough blocks of 128 x 128 remain, else 4 x 4), 4-vector loads of
// A and B from shared memory, one FMA per product.
TEST(TensorCores, LargeF32MatmulsRunAsCudaCoreTiles) {
  Graph g;
  const std::vector<Opt> cuda_cores{{OptOp::Tc, 0, 1}};
  Kernel big = only_kernel(g, matmul(g, 2048, 64, 4096) + 1.0);
  ASSERT_EQ(heuristic_opts(g, big, sm90()), cuda_cores);
  Kernel tiles = apply_opts(g, big, cuda_cores, sm90());
  EXPECT_NE(tuning_key(g, tiles), tuning_key(g, apply_opts(g, big, {{OptOp::Tc, 0, 0}}, [] {
                                               TargetProfile t = sm90();
                                               t.tf32 = true;
                                               return t;
                                             }())));
  LoopProgram p = lower(g, tiles, {.inner_loop = false});
  ASSERT_TRUE(p.tensor_cores);
  EXPECT_EQ(p.tensor_cores->tiles, (TensorCoreTiles{8, 8, 8, 8, true}));
  EXPECT_EQ(ptx_block_size(p), 256);
  EXPECT_EQ(ptx_grid_threads(p), 2048 * 4096 / 64);
  std::string ptx = render_ptx(g, p, {.sm = "sm_90"});
  EXPECT_EQ(count(ptx, "fma.rn.f32"), 8u * 64) << "8 along the reduce per step, 8 x 8 outputs";
  EXPECT_EQ(count(ptx, "ld.shared.v4.f32"), 8u * 4) << ptx;
  EXPECT_EQ(count(ptx, "wmma"), 0u);
  EXPECT_EQ(tensor_core_plan(g, apply_opts(g, only_kernel(g, matmul(g, 256, 64, 256)), cuda_cores, sm90()))->tiles,
            (TensorCoreTiles{4, 4, 8, 16, true}))
      << "16 blocks of 128 x 128 would leave the GPU idle";
  // Small ones keep the plain heuristic; 96 rows do not divide into 64-row bands; f16 has tensor cores.
  EXPECT_NE(heuristic_opts(g, only_kernel(g, matmul(g, 256, 64, 256)), sm90()), cuda_cores);
  EXPECT_THROW(apply_opts(g, only_kernel(g, matmul(g, 96, 64, 256)), cuda_cores, sm90()), Error);
  EXPECT_THROW(apply_opts(g, only_kernel(g, half_matmul(g, 256, 64, 256)), cuda_cores, sm90()), Error);
  EXPECT_THROW(apply_opts(g, big, cuda_cores, opencl_profile()), Error);
  EXPECT_THROW(apply_opts(g, big, {{OptOp::Tc, 0, 2}}, sm90()), Error);
}

// bf16 operands multiply on tensor cores from sm_80 (m16n16k16); f32 ones as tf32 (m16n16k8),
// only where --precision=tf32 allows it, staged 32 along the reduce (their shared memory is twice
// f16's).
TEST(TensorCores, Bf16AndTf32FromSm80) {
  Graph g;
  const std::vector<Opt> tc{{OptOp::Tc, 0, 0}};
  TargetProfile turing = sm90(), tf32 = sm90();
  turing.gpu_arch = "sm_75";
  tf32.tf32 = true;
  Kernel bf = only_kernel(
      g, Tensor::input(g, "a", DType::BF16, {256, 64}).matmul(Tensor::input(g, "b", DType::BF16, {64, 256})));
  ASSERT_TRUE(tensor_core_plan(g, bf));
  EXPECT_EQ(tensor_core_plan(g, bf)->type, DType::BF16);
  EXPECT_THROW(apply_opts(g, bf, tc, turing), Error);
  EXPECT_NE(heuristic_opts(g, bf, turing), tc);
  ASSERT_EQ(heuristic_opts(g, bf, sm90()), tc);
  std::string bptx = render_ptx(g, lower(g, apply_opts(g, bf, tc, sm90()), {.inner_loop = false}), {.sm = "sm_90"});
  EXPECT_GT(count(bptx, "wmma.load.a.sync.aligned.row.m16n16k16.shared.bf16"), 0u) << bptx;
  EXPECT_GT(count(bptx, "wmma.mma.sync.aligned.row.row.m16n16k16.f32.bf16.bf16.f32"), 0u) << bptx;

  Kernel f = only_kernel(g, matmul(g, 256, 64, 256));
  ASSERT_TRUE(tensor_core_plan(g, f));
  EXPECT_EQ(tensor_core_plan(g, f)->type, DType::F32);
  EXPECT_NE(heuristic_opts(g, f, sm90()), tc) << "fp32 stays on the CUDA cores";
  EXPECT_THROW(apply_opts(g, f, tc, sm90()), Error);
  ASSERT_EQ(heuristic_opts(g, f, tf32), tc);
  LoopProgram p = lower(g, apply_opts(g, f, tc, tf32), {.inner_loop = false});
  ASSERT_TRUE(p.tensor_cores);
  EXPECT_EQ(p.tensor_cores->tiles.staged, 32);
  std::string fptx = render_ptx(g, p, {.sm = "sm_90"});
  EXPECT_GT(count(fptx, "wmma.load.b.sync.aligned.row.m16n16k8.shared.tf32"), 0u) << fptx;
  EXPECT_GT(count(fptx, "wmma.mma.sync.aligned.row.row.m16n16k8.f32.tf32.tf32.f32"), 0u) << fptx;
  // Unstaged (a warp's own tiles from global memory): 48 columns are 3 fragments, no 2 x 2 block.
  std::string uptx =
      render_ptx(g, lower(g, apply_opts(g, only_kernel(g, matmul(g, 32, 64, 48)), tc, tf32), {.inner_loop = false}),
                 {.sm = "sm_90"});
  EXPECT_GT(count(uptx, "wmma.load.a.sync.aligned.row.m16n16k8.global.tf32"), 0u) << uptx;
}

}  // namespace
}  // namespace tgc
