// Every Tensor API op, compiled into a real artifact and run: cpu (LLVM, with the heuristic's
// optimizations), qcom (OpenCL C on pocl, host triple), vulkan (SPIR-V on lavapipe, with the
// validation layer on: any message fails the run) and cuda (PTX; run where a CUDA GPU is, else
// only generated, and skipped saying so). Outputs are compared with the reference
// interpreter. Slower than the unit tests (a compile and a process per case), so it
// is its own executable with the integration label.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

#include "codegen/pipeline.h"
#include "frontend/npy.h"
#include "ir/error.h"
#include "ir/interpret.h"
#include "tests/unit/padded_opts.h"
#include "tests/unit/test_util.h"

namespace tgc {
namespace {
namespace fs = std::filesystem;

class Builder {
 public:
  Builder() { m.graph = std::make_unique<Graph>(); }
  Tensor input(const Shape& s, float lo = -1, float hi = 1, DType t = DType::F32) {
    std::string name = "in" + std::to_string(m.inputs.size());
    Tensor x = Tensor::input(*m.graph, name, t, s);
    m.inputs.push_back({name, x});
    HostTensor h = test::host(s, test::random_floats(rng, numel(s), lo, hi));
    feeds[x.uop()->ival()] = t == DType::F32 ? h : cast_host(h, t);
    return x;
  }
  Tensor weight(const Shape& s, float lo = -1, float hi = 1) {
    return Tensor::weight(*m.graph, "w" + std::to_string(m.graph->num_buffers()),
                          test::host(s, test::random_floats(rng, numel(s), lo, hi)));
  }
  Tensor indices(const Shape& s, const std::vector<float>& v) {
    return Tensor::weight(*m.graph, "i" + std::to_string(m.graph->num_buffers()), test::host(s, v, DType::I64));
  }
  static HostTensor cast_host(const HostTensor& f, DType t) {
    HostTensor h(t, f.shape);
    for (int64_t i = 0; i < f.numel(); ++i) h.set(i, std::round(f.get(i) * 10));
    return h;
  }

  Model m;
  std::map<int64_t, HostTensor> feeds;
  std::mt19937 rng{7};
};

struct OpCase {
  const char* name;
  std::function<Tensor(Builder&)> build;
  // f16 cases: the interpreter rounds to f16 after every op, the kernels only when they store
  // (passes/half_math.h), so they agree to a few f16 ulps (2^-10 each).
  test::Tol tol = {1e-5, 1e-5};
};

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

// Movement ops.
std::vector<OpCase> movement_cases() {
  return {
      {"reshape", [](Builder& b) { return b.input({4, 6}).reshape({3, -1}) * 2.0; }},
      {"permute", [](Builder& b) { return b.input({2, 3, 5}).permute({2, 0, 1}) + 1.0; }},
      {"expand", [](Builder& b) { return b.input({3, 1}).expand({2, 3, 4}) * 1.0; }},
      {"pad", [](Builder& b) { return b.input({3, 4}).pad({{1, 2}, {0, 1}}, 0.5) * 1.0; }},
      {"shrink", [](Builder& b) { return b.input({5, 6}).shrink({{1, 4}, {2, 6}}) * 1.0; }},
      {"flip", [](Builder& b) { return b.input({3, 4}).flip({1}) * 1.0; }},
      {"transpose", [](Builder& b) { return b.input({4, 7}).transpose() * 1.0; }},
      {"slice", [](Builder& b) { return b.input({6, 8}).slice({1, 0}, {5, 8}, {0, 1}, {2, 3}) * 1.0; }},
      {"repeat", [](Builder& b) { return b.input({2, 3}).repeat({2, 3}) * 1.0; }},
      {"cat", [](Builder& b) { return Tensor::cat({b.input({2, 3}), b.input({4, 3})}, 0) * 1.0; }},
      {"gather", [](Builder& b) { return b.input({5, 4}).gather(b.indices({3}, {4, 0, 2}), 0) * 1.0; }},
      {"arange", [](Builder& b) { return Tensor::arange(*b.m.graph, 7, DType::F32) + b.input({7}); }},
  };
}

// Elementwise ops, casts and bit patterns.
std::vector<OpCase> elementwise_cases() {
  return {
      {"cast_f32_i32", [](Builder& b) { return (b.input({9}, -5, 5) * 3.0).cast(DType::I32); }},
      // bf16 kept in a buffer between two kernels: stored rounded, loaded back (OpenCL has no bf16).
      {"cast_bf16_buffer",
       [](Builder& b) {
         Tensor h = (b.input({5, 6}, -4, 4) * 3.7).cast(DType::BF16).contiguous();
         return h.cast(DType::F32).sum({1}) + h.cast(DType::F32).max({1});
       }},
      // The bits of f16 values, both ways (GGUF's f16 weights are read so).
      {"bitcast_f16",
       [](Builder& b) {
         Tensor from_bits = b.input({16}, 15360, 20000, DType::U16).bitcast(DType::F16).cast(DType::F32);
         Tensor to_bits = b.input({16}, -4, 4).cast(DType::F16).bitcast(DType::U16).cast(DType::F32);
         return from_bits + to_bits;
       }},
      {"int_arith",
       [](Builder& b) {
         Tensor x = b.input({8}, -5, 5, DType::I32), y = b.input({8}, 1, 5, DType::I32);
         return (x + y) * y - x.mod(y) + x.fmod(y);
       }},
      {"div_exact", [](Builder& b) { return b.input({10}).div_exact(b.input({10}, 0.5f, 2)); }},
      {"max_min",
       [](Builder& b) {
         Tensor x = b.input({10}), y = b.input({10});
         return x.maximum(y) - x.minimum(y);
       }},
      {"compare_where",
       [](Builder& b) {
         Tensor x = b.input({12}), y = b.input({12});
         return Tensor::where(x.lt(y).logical_or(x.ge(y * 0.5).logical_and(x.ne(y))), x, y);
       }},
      {"exp_log_sqrt",
       [](Builder& b) {
         Tensor x = b.input({16}, 0.1f, 3);
         return x.exp() + x.log() + x.sqrt() + x.rsqrt();
       }},
      {"trig",
       [](Builder& b) {
         Tensor x = b.input({16}, -1.5f, 1.5f);
         return x.sin() + x.cos() + x.tan();
       }},
      {"pow_abs_sign",
       [](Builder& b) {
         Tensor x = b.input({16}, -2, 2);
         return x.abs().pow(b.input({16}, 0, 2)) + x.sign();
       }},
      {"rounding",
       [](Builder& b) {
         Tensor x = b.input({20}, -4, 4);
         return x.trunc() + x.floor() * 2.0 + x.ceil() * 3.0 + x.round() * 4.0;
       }},
      {"activations",
       [](Builder& b) {
         Tensor x = b.input({32}, -4, 4);
         return x.relu() + x.leaky_relu(0.1) + x.sigmoid() + x.tanh() + x.erf() + x.gelu() + x.gelu(true) +
                x.clip(-1.0, 2.0);
       }},
      {"reciprocal_div",
       [](Builder& b) {
         Tensor x = b.input({16}, 0.5f, 2);
         return x.reciprocal() + b.input({16}) / x;
       }},
  };
}

// Reduces.
std::vector<OpCase> reduce_cases() {
  return {
      {"sum_mean",
       [](Builder& b) {
         Tensor x = b.input({5, 7, 3});
         return x.sum({1}) + x.mean({1});
       }},
      {"max_min_prod",
       [](Builder& b) {
         Tensor x = b.input({6, 5}, 0.5f, 1.5f);
         return x.max({0}) + x.min({0}) + x.prod({0});
       }},
      {"argmax_argmin",
       [](Builder& b) {
         Tensor x = b.input({4, 9});
         return (x.argmax(1) * 10 + x.argmin(1)).cast(DType::F32);
       }},
      {"sum_all", [](Builder& b) { return b.input({33, 31}).sum(); }},
  };
}

// Matmuls, convs, pools, norms, and kernels in a row.
std::vector<OpCase> nn_cases() {
  return {
      {"matmul_primes", [](Builder& b) { return b.input({13, 29}).matmul(b.weight({29, 17})); }},
      {"matmul_64", [](Builder& b) { return b.input({32, 64}).matmul(b.weight({64, 96})); }},
      {"batched_matmul", [](Builder& b) { return b.input({2, 5, 12}).matmul(b.input({2, 12, 32})); }},
      // A weight stored transposed (as GGUF's): the reduce is the contiguous axis (CPU: LANES).
      {"matvec_transposed", [](Builder& b) { return b.input({3, 128}).matmul(b.weight({40, 128}).permute({1, 0})); }},
      {"conv_bias_relu",
       [](Builder& b) {
         return b.input({1, 3, 11, 32})
             .conv(b.weight({8, 3, 3, 3}), b.weight({8}), {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)
             .relu();
       }},
      {"conv_strided_grouped",
       [](Builder& b) {
         return b.input({2, 4, 9, 7}).conv(b.weight({6, 2, 3, 3}), std::nullopt, {2, 1}, {1, 0, 0, 2}, {1, 2}, 2);
       }},
      // Dense convs whose rows vectors would fill only in part: on CPUs, lanes along output
      // channels, a tile of channel vectors x positions (passes/channel_tile.h). Columns of 14,
      // strides, dilation, groups, odd windows and pads.
      {"conv_channel_tile",
       [](Builder& b) {
         return b.input({1, 8, 6, 14}).conv(b.weight({64, 8, 3, 3}), b.weight({64}), {1, 1}, {1, 1, 1, 1}, {1, 1}, 1);
       }},
      {"conv_channel_tile_strided",
       [](Builder& b) {
         return b.input({1, 8, 9, 15}).conv(b.weight({32, 8, 3, 3}), std::nullopt, {2, 2}, {1, 1, 1, 1}, {1, 1}, 1);
       }},
      {"conv_channel_tile_dilated",
       [](Builder& b) {
         return b.input({1, 8, 11, 11}).conv(b.weight({32, 8, 3, 3}), std::nullopt, {1, 1}, {2, 2, 2, 2}, {2, 2}, 1);
       }},
      {"conv_channel_tile_grouped",
       [](Builder& b) {
         return b.input({1, 16, 7, 7}).conv(b.weight({64, 8, 3, 3}), std::nullopt, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2);
       }},
      {"conv_channel_tile_odd_window",
       [](Builder& b) {
         return b.input({1, 12, 13, 10})
             .conv(b.weight({48, 12, 5, 3}), b.weight({48}), {1, 1}, {2, 1, 2, 1}, {1, 1}, 1);
       }},
      {"depthwise",
       [](Builder& b) {
         return b.input({1, 6, 7, 48}).conv(b.weight({6, 1, 5, 5}), std::nullopt, {1, 1}, {2, 2, 2, 2}, {1, 1}, 6);
       }},
      // Small kernels in a row: one serial launch on qcom (passes/serial_launches.h), group
      // reduces and flat stages sharing one work-group.
      {"squeeze_excite",
       [](Builder& b) {
         Tensor x = b.input({1, 24, 6, 16});
         Tensor se =
             x.mean({2, 3}, true).conv(b.weight({6, 24, 1, 1}), b.weight({6}), {1, 1}, {0, 0, 0, 0}, {1, 1}, 1).relu();
         se = se.conv(b.weight({24, 6, 1, 1}), b.weight({24}), {1, 1}, {0, 0, 0, 0}, {1, 1}, 1).sigmoid();
         return (x * se).conv(b.weight({8, 24, 1, 1}), std::nullopt, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1);
       }},
      {"pool_fc_softmax",
       [](Builder& b) {
         Tensor x = b.input({1, 40, 4, 12}).mean({2, 3});
         return (x.matmul(b.weight({40, 10})) + b.weight({10})).softmax(-1);
       }},
      {"max_pool",
       [](Builder& b) { return b.input({1, 2, 9, 7}).max_pool({3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, true); }},
      {"avg_pool",
       [](Builder& b) { return b.input({1, 3, 17, 16}).avg_pool({2, 2}, {2, 2}, {0, 0, 0, 0}, false, false); }},
      {"softmax", [](Builder& b) { return b.input({7, 33}, -3, 3).softmax(-1); }},
      {"log_softmax", [](Builder& b) { return b.input({4, 20}, -3, 3).log_softmax(0); }},
      {"layer_norm", [](Builder& b) { return b.input({6, 48}).layer_norm({1}, b.weight({48}), b.weight({48}), 1e-5); }},
      {"batch_norm",
       [](Builder& b) {
         return b.input({2, 4, 5, 5})
             .batch_norm(b.weight({4}), b.weight({4}), b.weight({4}), b.weight({4}, 0.5f, 2), 1e-5);
       }},
      {"contiguous_chain", [](Builder& b) { return (b.input({64, 64}).contiguous() * 2.0).exp().sum({0}); }},
      // f16 storage, f32 math: a padded copy (the inner loop split at the pad's edges), leaky
      // relu's compare and a max pool (f16 widened exactly), a conv summing in f32.
      {"f16_pad_leaky_pool",
       [](Builder& b) {
         Tensor x = b.input({1, 2, 9, 20}, -1, 1, DType::F16).pad({{0, 0}, {0, 0}, {1, 1}, {2, 2}}, 0.0).contiguous();
         return x.leaky_relu(0.1).contiguous().max_pool({3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, false).cast(DType::F32);
       },
       {4e-3, 1e-2}},
      {"f16_conv",
       [](Builder& b) {
         Tensor w = b.weight({8, 3, 3, 3}).cast(DType::F16);
         return b.input({1, 3, 8, 32}, -1, 1, DType::F16)
             .conv(w, std::nullopt, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1)
             .relu()
             .cast(DType::F32);
       },
       {4e-3, 1e-1}},
      // An int8 matmul's tile (frontend/gguf/int8_matmul.h): vector lanes along the 32 rows, two
      // DOT4s per block; on x86 with VNNI, vpdpbusd. Words of random bits (products wrap).
      {"dot4_rows",
       [](Builder& b) {
         Tensor w = b.input({8, 2, 32}, -100, 100, DType::I32) * 16777619.0,
                x = b.input({8, 2, 1}, -100, 100, DType::I32) * 40503.0;
         auto word = [](const Tensor& t, int64_t j) { return t.shrink({{0, 8}, {j, j + 1}, {0, t.dim(2)}}); };
         Tensor acc = Tensor::dot4(word(w, 0), word(x, 0), Tensor::full(*b.m.graph, {1, 1, 1}, 0, DType::I32));
         return Tensor::dot4(word(w, 1), word(x, 1), acc).cast(DType::F32).sum({0});
       }},
      {"f16_matvec_transposed",
       [](Builder& b) {
         return b.input({2, 256}).matmul(b.input({24, 256}, -1, 1, DType::F16).cast(DType::F32).permute({1, 0}));
       },
       {1e-4, 1e-4}},
  };
}

const std::vector<OpCase>& op_cases() {
  static const std::vector<OpCase> c = [] {
    std::vector<OpCase> all;
    for (auto group : {movement_cases, elementwise_cases, reduce_cases, nn_cases})
      for (OpCase& oc : group()) all.push_back(std::move(oc));
    return all;
  }();
  return c;
}

// Compiles the case into `dir` with its inputs beside it; returns the artifact's arguments.
std::string compile_case(Builder& b, const std::string& target, const std::string& triple,
                         std::function<std::vector<Opt>(Graph&, const Kernel&, const TargetProfile&)> choose,
                         const fs::path& dir) {
  fs::remove_all(dir);
  fs::create_directories(dir);
  CompileOptions opt;
  opt.target = target;
  opt.triple = triple;
  opt.output = (dir / "model").string();
  opt.runtime_dir = TGC_RUNTIME_DIR;
  if (choose)
    opt.choose_opts = [choose](Graph& g, const std::vector<Kernel>& ks, const ResolvedTarget& t) {
      std::vector<std::vector<Opt>> all;
      for (const Kernel& k : ks) all.push_back(choose(g, k, t.profile));
      return all;
    };
  compile_model(b.m, opt);
  std::string args;
  for (const NamedTensor& in : b.m.inputs) {
    write_npy((dir / (in.name + ".npy")).string(), b.feeds.at(in.tensor.uop()->ival()));
    args += " -i " + in.name + "=" + in.name + ".npy";
  }
  return args;
}

HostTensor run_artifact(Builder& b, const std::string& target, const std::string& triple,
                        std::function<std::vector<Opt>(Graph&, const Kernel&, const TargetProfile&)> choose) {
  fs::path dir = fs::temp_directory_path() / ("tgc-ops-" + std::to_string(getpid()));
  // Removed on every way out (a CUDA case without a device throws), unless TGC_KEEP is set.
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      if (!getenv("TGC_KEEP")) fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  std::string args = compile_case(b, target, triple, choose, dir);
  std::string cmd = "cd '" + dir.string() + "' && ./model" + args + " -o out > log 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir / "log");
    std::string first;
    std::getline(log, first);
    throw Error(
        "artifact failed: " + first +
        (getenv("TGC_KEEP") ? " (see " + (dir / "log").string() + ")" : " (TGC_KEEP=1 keeps " + dir.string() + ")"));
  }
  return read_npy((dir / "out" / "out.npy").string());
}

class CompiledOps : public ::testing::TestWithParam<OpCase> {
 protected:
  void check(const std::string& target, const std::string& triple,
             std::function<std::vector<Opt>(Graph&, const Kernel&, const TargetProfile&)> choose = nullptr) {
    Builder b;
    Tensor out = GetParam().build(b);
    b.m.outputs.push_back({"out", out});
    HostTensor want = interpret(*b.m.graph, {out.uop()}, b.feeds)[0];
    // TGC_GPU_BUNDLE=DIR: GPU cases are compiled here and run elsewhere (tools/scripts/gpu-check.sh):
    // DIR/ops/<test>/ holds the artifact, its inputs, `args` and the interpreter's want.npy.
    if (const char* bundle = getenv("TGC_GPU_BUNDLE"); bundle && target == "cuda") {
      const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
      std::string name = std::string(info->name()) + "-" + info->test_suite_name();
      for (char& ch : name) ch = std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      fs::path dir = fs::path(bundle) / "ops" / name;
      std::string args = compile_case(b, target, triple, choose, dir);
      std::ofstream(dir / "args") << args << "\n";
      std::ofstream(dir / "tol") << GetParam().tol.rel << " " << GetParam().tol.abs << "\n";
      write_npy((dir / "want.npy").string(), want);
      GTEST_SKIP() << "exported to " << dir.string();
    }
    HostTensor got;
    try {
      got = run_artifact(b, target, triple, choose);
    } catch (const Error& e) {
      std::string why = e.what();
      if (target == "vulkan" &&
          (why.find("no Vulkan device") != std::string::npos || why.find("cannot load libvulkan") != std::string::npos))
        GTEST_SKIP() << "no Vulkan device here: " << why;
      // The PTX was generated (and verified by LLVM) before the artifact ran.
      if (target == "cuda" &&
          (why.find("no CUDA device") != std::string::npos || why.find("cannot load libcuda") != std::string::npos))
        GTEST_SKIP() << "PTX generated; no CUDA device here to run it: " << why;
      throw;
    }
    ASSERT_EQ(got.shape, want.shape);
    ASSERT_EQ(got.dtype, want.dtype);
    EXPECT_TRUE(test::all_close(test::values(got), test::values(want), GetParam().tol)) << target;
  }
};

TEST_P(CompiledOps, Cpu) { check("cpu", ""); }
TEST_P(CompiledOps, QcomOnPocl) { check("qcom", "x86_64-linux-gnu"); }
TEST_P(CompiledOps, Vulkan) { check("vulkan", ""); }
TEST_P(CompiledOps, Cuda) { check("cuda", ""); }

// Reduces split across work-groups (GROUP: shared memory and barriers), with the heuristic's
// work-groups on the output where they still fit.
std::vector<Opt> group_reduce_opts(Graph& g, const Kernel& k, const TargetProfile& t) {
  std::vector<Opt> opts;
  std::vector<const UOp*> axes = kernel_axes(k);
  for (size_t a = k.global_ranges.size(); a < axes.size() && opts.empty(); ++a)
    for (int64_t n : {16, 8, 4, 3, 2})
      if (axes[a]->src[0]->ival() % n == 0) {
        opts.push_back({OptOp::Group, int(a), n});
        break;
      }
  for (const Opt& o : heuristic_opts(g, k, t)) {
    opts.push_back(o);
    try {
      apply_opts(g, k, opts, t);
    } catch (const Error&) {
      opts.pop_back();
    }
  }
  return opts;
}
TEST_P(CompiledOps, QcomOnPoclGroupReduce) { check("qcom", "x86_64-linux-gnu", group_reduce_opts); }
TEST_P(CompiledOps, VulkanGroupReduce) { check("vulkan", "", group_reduce_opts); }
TEST_P(CompiledOps, CudaGroupReduce) { check("cuda", "", group_reduce_opts); }

// The GROUP range innermost (after the heuristic's opts): GLSL reduces it with subgroup
// arithmetic where the subgroup size (8 on lavapipe) divides it -- 16: subgroups, then a
// shared-memory fold of 2; 8: one subgroup; 4: the shared-memory path chosen at run time.
std::function<std::vector<Opt>(Graph&, const Kernel&, const TargetProfile&)> innermost_group(int64_t n) {
  return [n](Graph& g, const Kernel& k, const TargetProfile& t) {
    std::vector<Opt> opts = heuristic_opts(g, k, t);
    if (!opts.empty() && (opts[0].op == OptOp::Group || opts[0].op == OptOp::GroupTop)) opts.clear();
    Kernel cur = apply_opts(g, k, opts, t);
    std::vector<const UOp*> axes = kernel_axes(cur);
    for (size_t a = cur.global_ranges.size(); a < axes.size(); ++a)
      if (axes[a]->src[0]->ival() % n == 0) {
        opts.push_back({OptOp::Group, int(a), n});
        try {
          apply_opts(g, k, opts, t);
        } catch (const Error&) {
          opts.pop_back();
        }
        break;
      }
    return opts;
  };
}
TEST_P(CompiledOps, VulkanSubgroup16) { check("vulkan", "", innermost_group(16)); }
TEST_P(CompiledOps, VulkanSubgroup8) { check("vulkan", "", innermost_group(8)); }
TEST_P(CompiledOps, VulkanSubgroup4) { check("vulkan", "", innermost_group(4)); }

// Devices without a feature (TGC_VK_HIDE pretends so). Without subgroup arithmetic the kernels'
// second SPIR-V, group reduces through shared memory only, runs (layer_norm's reduces take the
// subgroup path); without 16-bit storage, which nothing replaces, a one-line error names the
// feature, not a driver crash.
TEST(CompiledOpsErrors, VulkanDeviceWithoutAFeature) {
  // The error of running op case `op` with `feature` hidden ("" if none), and whether the
  // results then match the interpreter's.
  auto run_hiding = [](const char* op, const char* feature, bool* matches) {
    const OpCase* c = nullptr;
    for (const OpCase& o : op_cases())
      if (std::string(o.name) == op) c = &o;
    EXPECT_NE(c, nullptr);
    Builder b;
    Tensor out = c->build(b);
    b.m.outputs.push_back({"out", out});
    setenv("TGC_VK_HIDE", feature, 1);
    std::string why;
    try {
      HostTensor got = run_artifact(b, "vulkan", "", innermost_group(16));
      *matches =
          test::all_close(test::values(got), test::values(interpret(*b.m.graph, {out.uop()}, b.feeds)[0]), c->tol);
    } catch (const Error& e) {
      why = e.what();
    }
    unsetenv("TGC_VK_HIDE");
    return why;
  };
  bool matches = false;
  std::string why = run_hiding("layer_norm", "subgroup-arithmetic", &matches);
  if (why.find("no Vulkan device") != std::string::npos) GTEST_SKIP() << why;
  EXPECT_EQ(why, "");
  EXPECT_TRUE(matches) << "the fallback's results differ from the interpreter's";
  why = run_hiding("f16_pad_leaky_pool", "storage16", &matches);
  EXPECT_NE(why.find("needs storageBuffer16BitAccess, which"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos) << "one line: " << why;
}

// Padded axes (tests/unit/padded_opts.h) in the real renderers: gated stores (all at once or one by
// one on CPU), gated loads and reduces that skip the padding.
TEST_P(CompiledOps, CpuPadded) { check("cpu", "", test::padded_split_opts); }
TEST_P(CompiledOps, QcomOnPoclPadded) { check("qcom", "x86_64-linux-gnu", test::padded_split_opts); }
TEST_P(CompiledOps, VulkanPadded) { check("vulkan", "", test::padded_split_opts); }
TEST_P(CompiledOps, CudaPadded) { check("cuda", "", test::padded_split_opts); }

INSTANTIATE_TEST_SUITE_P(TensorApi, CompiledOps, ::testing::ValuesIn(op_cases()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tgc
