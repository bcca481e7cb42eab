// Tuning: the BEAM search on a fake clock (dropped candidates, the cap), the tuning key, the
// SQLite cache, the agent's greeting and OpenCL candidate formats, and the agent client against a
// real tgc-agent running misbehaving CPU candidates and OpenCL candidates (pocl here).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "cl_candidate.h"
#include "codegen/dialect.h"
#include "codegen/llvm/target.h"
#include "codegen/gpu/runtime_candidate.h"
#include "codegen/opencl/render_opencl.h"
#include "ir/error.h"
#include "ir/tensor.h"
#include "passes/beam.h"
#include "passes/lower.h"
#include "passes/schedule.h"
#include "tune/agent_client.h"
#include "tune/tune_cache.h"

namespace tgc {
namespace {

Kernel matmul_kernel(Graph& g, int64_t m, int64_t k, int64_t n, const std::string& name) {
  Tensor a = Tensor::input(g, name + "_a", DType::F32, {m, k});
  Tensor b = Tensor::input(g, name + "_b", DType::F32, {k, n});
  Schedule s = schedule(g, {a.matmul(b).uop()});
  EXPECT_EQ(s.kernels.size(), 1u);
  return s.kernels.at(0);
}

int64_t upcast_product(const std::vector<Opt>& opts) {
  int64_t p = 1;
  for (const Opt& o : opts) p *= o.amount;
  return p;
}

TEST(BeamSearch, FindsTheFastestCandidateAndSurvivesDroppedOnes) {
  Graph g;
  Kernel k = matmul_kernel(g, 16, 32, 24, "x");
  TargetProfile t;  // a CPU with 8 lanes
  BeamOptions opt;
  opt.width = 3;
  int calls = 0;
  std::vector<std::pair<std::vector<Opt>, double>> seen;
  // Fake clock: more copies are faster up to 16; any amount of 3 "crashes".
  MeasureFn measure = [&](const std::vector<std::vector<Opt>>& batch) {
    ++calls;
    std::vector<std::optional<double>> out;
    for (const auto& opts : batch) {
      bool crash = std::any_of(opts.begin(), opts.end(), [](const Opt& o) { return o.amount == 3; });
      int64_t p = upcast_product(opts);
      if (crash)
        out.push_back(std::nullopt);
      else
        out.push_back(100.0 / double(std::min<int64_t>(p, 16)) + double(p > 16 ? p : 0) + 0.01 * double(opts.size()));
      if (out.back()) seen.push_back({opts, *out.back()});
    }
    return out;
  };
  BeamResult r = beam_search(g, k, t, opt, measure);
  EXPECT_GT(calls, 1);
  EXPECT_GT(r.failed, 0) << "candidates with an amount of 3 exist for 24 and were dropped";
  EXPECT_LE(r.tried, opt.max_candidates);
  ASSERT_GE(r.us, 0);
  EXPECT_EQ(upcast_product(r.opts), 16) << opts_str(r.opts);
  double best = 1e300;
  for (const auto& [o, us] : seen) best = std::min(best, us);
  EXPECT_DOUBLE_EQ(r.us, best);
  EXPECT_NO_THROW(apply_opts(g, k, r.opts, t));
}

TEST(BeamSearch, AllCandidatesDroppedKeepsTheHeuristic) {
  Graph g;
  Kernel k = matmul_kernel(g, 16, 32, 24, "x");
  TargetProfile t;
  BeamResult r = beam_search(g, k, t, BeamOptions{}, [](const std::vector<std::vector<Opt>>& b) {
    return std::vector<std::optional<double>>(b.size());
  });
  EXPECT_LT(r.us, 0);
  EXPECT_EQ(r.opts, heuristic_opts(g, k, t));
}

// Prime sizes have no split but the whole axis: the search reaches wide tiles through PADTO.
TEST(BeamSearch, PadsPrimeAxesToSplitThem) {
  Graph g;
  Kernel k = matmul_kernel(g, 13, 29, 17, "p");
  TargetProfile t;
  auto widest_split = [](const std::vector<Opt>& opts) {
    int64_t w = 1;
    for (const Opt& o : opts)
      if (o.op == OptOp::Upcast) w = std::max(w, o.amount);
    return w;
  };
  BeamResult r = beam_search(g, k, t, BeamOptions{}, [&](const std::vector<std::vector<Opt>>& batch) {
    std::vector<std::optional<double>> out;
    for (const auto& opts : batch) out.push_back(100.0 / double(std::min<int64_t>(widest_split(opts), 16)));
    return out;
  });
  EXPECT_EQ(widest_split(r.opts), 16) << opts_str(r.opts);
  EXPECT_TRUE(std::any_of(r.opts.begin(), r.opts.end(), [](const Opt& o) { return o.op == OptOp::Padto; }))
      << opts_str(r.opts);
  EXPECT_NO_THROW(apply_opts(g, k, r.opts, t));
}

TEST(TuningKey, SameComputationOnOtherBuffersSharesTheKey) {
  Graph g;
  Kernel a = matmul_kernel(g, 16, 32, 24, "a");
  Kernel b = matmul_kernel(g, 16, 32, 24, "b");
  Kernel c = matmul_kernel(g, 16, 32, 8, "c");
  EXPECT_NE(a.hash(), b.hash()) << "the AST names its buffers";
  EXPECT_EQ(tuning_key(g, a), tuning_key(g, b));
  EXPECT_NE(tuning_key(g, a), tuning_key(g, c));
  Graph g2;  // and in another graph (another run, another model)
  EXPECT_EQ(tuning_key(g2, matmul_kernel(g2, 16, 32, 24, "z")), tuning_key(g, a));
}

TEST(TuneCache, StoresAndFindsByTargetDeviceAndKernel) {
  std::string path =
      (std::filesystem::temp_directory_path() / ("tgc-cache-test-" + std::to_string(getpid())) / "t.sqlite").string();
  {
    TuneCache c(path);
    EXPECT_FALSE(c.find("cpu x", "dev", "k1"));
    c.store("cpu x", "dev", "k1", {"UPCAST(0,4)", 1.5, 3.0}, "k7");
    c.store("cpu x", "dev", "k1", {"UPCAST(0,8)", 1.25, 3.0}, "k7");  // replaces
  }
  TuneCache c(path);  // persisted
  auto e = c.find("cpu x", "dev", "k1");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->opts, "UPCAST(0,8)");
  EXPECT_DOUBLE_EQ(e->us, 1.25);
  EXPECT_FALSE(c.find("cpu x", "other device", "k1"));
  EXPECT_FALSE(c.find("cpu y", "dev", "k1"));
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string agent_command() { return std::string("'") + TGC_AGENT + "'"; }

TEST(AgentClient, DropsCrashingHangingAndExitingCandidatesAndGoesOn) {
  AgentClient agent(agent_command(), /*timeout_s=*/2);
  EXPECT_NE(agent.device(), "");
  EXPECT_EQ(agent.arch(), TGC_HOST_ARCH);
  std::string good = slurp(TGC_CANDIDATE_GOOD), why;
  ASSERT_FALSE(good.empty());

  auto t = agent.time(good, 50, 5, why);
  ASSERT_TRUE(t) << why;
  EXPECT_GT(t->min_us, 0);
  EXPECT_LE(t->min_us, t->median_us);
  EXPECT_GT(t->out_abs_sum, 0);  // 2 * random data in [-1, 1)

  EXPECT_FALSE(agent.time(slurp(TGC_CANDIDATE_CRASH), 50, 5, why));
  EXPECT_NE(why.find("signal"), std::string::npos) << why;
  EXPECT_EQ(agent.restarts(), 1);
  auto t2 = agent.time(good, 50, 5, why);
  ASSERT_TRUE(t2) << why;
  EXPECT_EQ(t2->out_sum, t->out_sum) << "the same inputs every time";

  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(agent.time(slurp(TGC_CANDIDATE_HANG), 50, 5, why));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
  EXPECT_NE(why.find("no answer"), std::string::npos) << why;
  EXPECT_TRUE(agent.time(good, 50, 5, why)) << why;

  EXPECT_FALSE(agent.time(slurp(TGC_CANDIDATE_EXIT), 50, 5, why));
  EXPECT_NE(why.find("status 3"), std::string::npos) << why;
  EXPECT_TRUE(agent.time(good, 50, 5, why)) << why;

  // Not a shared object: the agent says so and stays up.
  EXPECT_FALSE(agent.time("not an ELF file", 50, 5, why));
  EXPECT_NE(why.find("dlopen"), std::string::npos) << why;
  EXPECT_EQ(agent.restarts(), 3);
  EXPECT_TRUE(agent.time(good, 50, 5, why)) << why;
}

TEST(AgentClient, AnAgentThatCannotStartIsAnError) {
  EXPECT_THROW(AgentClient("exit 3", 2), Error);
  EXPECT_THROW(AgentClient("echo hello", 2), Error);
  try {
    AgentClient("/nonexistent/tgc-agent", 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("status 127"), std::string::npos) << e.what();
  }
}

TEST(BeamSearch, GpuActionsAddWorkGroupsWithinMaxLocal) {
  Graph g;
  Kernel k = matmul_kernel(g, 16, 256, 512, "x");  // axes: 0 (16), 1 (512), 2 (reduce 256)
  TargetProfile t = opencl_profile();
  auto has = [](const std::vector<Opt>& as, OptOp op, int axis, int64_t amount) {
    return std::find(as.begin(), as.end(), Opt{op, axis, amount}) != as.end();
  };
  auto splits = [](const std::vector<std::vector<Opt>>& moves) {  // each move's last action
    std::vector<Opt> last;
    for (const auto& m : moves) last.push_back(m.back());
    return last;
  };
  std::vector<Opt> first = splits(candidate_moves(g, k, {}, t));
  EXPECT_TRUE(has(first, OptOp::Local, 1, 256)) << opts_str(first);
  EXPECT_TRUE(has(first, OptOp::Group, 2, 16)) << opts_str(first);
  EXPECT_TRUE(has(first, OptOp::GroupTop, 2, 16)) << opts_str(first);
  EXPECT_FALSE(has(first, OptOp::Local, 1, 512)) << "beyond max_local " << t.max_local;
  EXPECT_FALSE(has(first, OptOp::Upcast, 1, 64)) << "register tiles stay small";
  // With 64 threads per group already, only 4 more fit.
  std::vector<Opt> more = splits(candidate_moves(g, k, {{OptOp::Local, 1, 64}}, t));
  EXPECT_TRUE(has(more, OptOp::Group, 2, 4)) << opts_str(more);
  for (const Opt& o : more) {
    if (o.op == OptOp::Local || o.op == OptOp::Group || o.op == OptOp::GroupTop) {
      EXPECT_LE(o.amount, 4) << opt_str(o);
    }
  }
  // A CPU has no work-groups, but reduce lanes.
  std::vector<Opt> cpu;
  for (const auto& m : candidate_moves(g, k, {}, TargetProfile{}))
    for (const Opt& o : m) {
      EXPECT_TRUE(o.op == OptOp::Upcast || o.op == OptOp::Unroll || o.op == OptOp::Lanes || o.op == OptOp::Padto)
          << opt_str(o);
      cpu.push_back(o);
    }
  EXPECT_TRUE(has(cpu, OptOp::Lanes, 2, 8)) << opts_str(cpu);
}

TEST(AgentGreeting, ParsesEveryVersionAndRejectsOthers) {
  AgentGreeting g;
  EXPECT_EQ(parse_agent_greeting("tgc-agent 1 x86_64 AMD EPYC", g), 0);
  EXPECT_EQ(g.device, "x86_64 AMD EPYC");
  EXPECT_EQ(g.api("opencl").name, "");
  EXPECT_NE(g.api("opencl").why.find("older tgc-agent"), std::string::npos) << g.api("opencl").why;

  EXPECT_EQ(parse_agent_greeting("tgc-agent 2 aarch64 implementer 0x41 part 0xd05", g), 1) << "an OpenCL line follows";
  EXPECT_EQ(g.device, "aarch64 implementer 0x41 part 0xd05");
  parse_agent_api_line(0, "opencl QUALCOMM Adreno(TM) 740, driver OpenCL 3.0 QUALCOMM build", g);
  EXPECT_EQ(g.api("opencl").name, "QUALCOMM Adreno(TM) 740, driver OpenCL 3.0 QUALCOMM build");
  parse_agent_api_line(0, "no-opencl cannot load libOpenCL.so.1", g);
  EXPECT_EQ(g.api("opencl").name, "");
  EXPECT_EQ(g.api("opencl").why, "cannot load libOpenCL.so.1");

  for (const char* bad : {"tgc-agent", "tgc-agent 2", "tgc-agent 2 ", "tgc-agent x86_64", "hello", "tgc-agent 1x foo"})
    EXPECT_THROW(parse_agent_greeting(bad, g), Error) << bad;
  EXPECT_NE(g.api("vulkan").why.find("older tgc-agent"), std::string::npos) << g.api("vulkan").why;

  EXPECT_EQ(parse_agent_greeting("tgc-agent 3 x86_64 AMD EPYC", g), 2) << "OpenCL and Vulkan lines follow";
  EXPECT_NE(g.api("cuda").why.find("older tgc-agent"), std::string::npos) << g.api("cuda").why;
  parse_agent_api_line(1, "vulkan NVIDIA H200", g);
  EXPECT_EQ(g.api("vulkan").name, "NVIDIA H200");
  parse_agent_api_line(1, "no-vulkan cannot load libvulkan.so.1", g);
  EXPECT_EQ(g.api("vulkan").name, "");
  EXPECT_EQ(g.api("vulkan").why, "cannot load libvulkan.so.1");

  EXPECT_EQ(parse_agent_greeting("tgc-agent 4 x86_64 AMD EPYC", g), 3) << "OpenCL, Vulkan and CUDA lines follow";
  parse_agent_api_line(2, "cuda NVIDIA H100 80GB HBM3", g);
  EXPECT_EQ(g.api("cuda").name, "NVIDIA H100 80GB HBM3");
  parse_agent_api_line(2, "no-cuda cannot load libcuda.so.1", g);
  EXPECT_EQ(g.api("cuda").name, "");
  EXPECT_EQ(g.api("cuda").why, "cannot load libcuda.so.1");
  try {
    parse_agent_greeting("tgc-agent 5 x86_64 AMD EPYC", g);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("version 5"), std::string::npos) << e.what();
  }
  for (const char* bad : {"opencl", "opencl ", "no-opencl", "ok 1 2 3", ""})
    EXPECT_THROW(parse_agent_api_line(0, bad, g), Error) << bad;
  for (const char* bad : {"vulkan", "vulkan ", "no-vulkan", "opencl x", ""})
    EXPECT_THROW(parse_agent_api_line(1, bad, g), Error) << bad;
  for (const char* bad : {"cuda", "cuda ", "no-cuda", "vulkan x", ""})
    EXPECT_THROW(parse_agent_api_line(2, bad, g), Error) << bad;
}

LoopProgram opencl_program(Graph& g, const Kernel& k, const std::vector<Opt>& opts) {
  return lower(g, apply_opts(g, k, opts, opencl_profile()), {.inner_loop = false});
}

// The OpenCL candidate of p, as --beam makes it.
std::string opencl_candidate(const Graph& g, const LoopProgram& p) {
  return runtime_candidate(RuntimeApi::OpenCl, g, p, dialect_ops(Dialect::OpenCL).render_gpu(g, p, opencl_profile()));
}

tgc_cl_candidate parse_candidate(const std::string& payload, std::string& err) {
  tgc_cl_candidate c;
  char buf[256] = "";
  if (tgc_cl_candidate_parse(payload.data(), payload.size(), &c, buf, sizeof buf) != 0) c.kernel[0] = 0;
  err = buf;
  return c;
}

TEST(OpenClCandidate, WhatTgcWritesTheAgentReads) {
  Graph g;
  Kernel k = matmul_kernel(g, 8, 64, 96, "x");
  std::string payload = opencl_candidate(g, opencl_program(g, k, {{OptOp::Local, 1, 32}, {OptOp::Group, 2, 4}}));
  std::string err;
  auto c = std::make_unique<tgc_cl_candidate>(parse_candidate(payload, err));
  ASSERT_STRNE(c->kernel, "") << err << "\n" << payload;
  EXPECT_EQ(c->kernel, k.name);
  EXPECT_EQ(c->global_size, 8 * 96 * 4) << "every output element, times the GROUP threads";
  EXPECT_EQ(c->local_size, 32 * 4);
  ASSERT_EQ(c->num_buffers, 3);
  EXPECT_EQ(c->buffer_bytes[0], 8 * 96 * 4) << "output first";
  EXPECT_EQ(c->buffer_dtypes[0], int32_t(DType::F32));
  EXPECT_NE(std::string(c->source, c->source_len).find("#else\n__kernel void " + k.name + "("), std::string::npos)
      << std::string(c->source, c->source_len);

  std::string no_locals = opencl_candidate(g, opencl_program(g, k, {}));
  c = std::make_unique<tgc_cl_candidate>(parse_candidate(no_locals, err));
  EXPECT_EQ(c->local_size, kOpenClFlatGroupSize) << "no LOCAL: groups of a fixed size, as the runtime launches it";
  EXPECT_EQ(c->global_size, (8 * 96 + kOpenClFlatGroupSize - 1) / kOpenClFlatGroupSize * kOpenClFlatGroupSize);
}

TEST(OpenClCandidate, MalformedCandidatesSayWhatIsWrong) {
  std::string head = "tgc-cl 1\nkernel k\nglobal 64\nlocal 16\nbuffer 256 11\n";
  std::string err;
  ASSERT_STREQ(parse_candidate(head + "source\n__kernel void k() {}", err).kernel, "k") << err;
  std::vector<std::pair<std::string, std::string>> bad = {
      {"tgc-cl 2\nkernel k\n", "version"},
      {head + "__kernel void k() {}", "'source'"},
      {head + "source\n", "no source"},
      {"tgc-cl 1\nkernel k\nglobal 64\nlocal 24\nbuffer 256 11\nsource\nx", "not a multiple"},
      {"tgc-cl 1\nkernel k\nglobal 64\nlocal 0\nsource\nx", "no buffers"},
      {"tgc-cl 1\nkernel 9k\n", "kernel name"},
      {"tgc-cl 1\nkernel k\nglobal -4\n", "global size"},
      {"tgc-cl 1\nkernel k\nglobal 64\nbuffer 256 13\n", "buffer line"},
      {"tgc-cl 1\nkernel k\nglobal 64\nbuffer 256\n", "buffer line"},
      {"tgc-cl 1\nkernel k\nglobal 64\nlocal 16\nbuffers 2\n", "unknown candidate line"},
      {"tgc-cl 1\nglobal 64\nlocal 16\nbuffer 4 11\nsource\nx", "no kernel"},
      {"tgc-cl 1\nkernel k\nlocal 16\nbuffer 4 11\nsource\nx", "no global size"},
  };
  for (const auto& [text, why] : bad) {
    EXPECT_STREQ(parse_candidate(text, err).kernel, "") << text;
    EXPECT_NE(err.find(why), std::string::npos) << "'" << err << "' for:\n" << text;
  }
}

// Vulkan and CUDA candidates, as the tuner builds them, parse on the agent with the launch the
// runtime makes: the kernel name, whole blocks for CUDA, the buffers, the blob to the end.
TEST(RuntimeCandidate, WhatTgcWritesTheAgentReads) {
  for (const char* target : {"vulkan", "cuda"}) {
    Graph g;
    Kernel k = matmul_kernel(g, 8, 64, 96, "x");
    ResolvedTarget t = resolve_target(target, "", "");
    const DialectOps& d = dialect_ops(t.desc->dialect);
    LoopProgram p = lower_kernel(g, k, {{OptOp::Local, 1, 32}}, t).program;
    std::string payload = d.candidate(g, p, t, "");
    auto c = std::make_unique<tgc_cl_candidate>();
    char err[256] = "";
    bool vk = std::string(target) == "vulkan";
    ASSERT_EQ((vk ? tgc_vk_candidate_parse : tgc_cuda_candidate_parse)(payload.data(), payload.size(), c.get(), err,
                                                                       sizeof err),
              0)
        << target << ": " << err;
    EXPECT_EQ(c->kernel, p.name) << target;
    EXPECT_EQ(c->local_size, 32) << target;
    EXPECT_EQ(c->global_size, 8 * 96) << target;
    ASSERT_EQ(c->num_buffers, 3) << target;
    EXPECT_EQ(c->buffer_bytes[0], 8 * 96 * 4) << target << ": output first";
    GpuKernel kernel = d.render_gpu(g, p, t.profile);
    EXPECT_EQ(std::string(c->source, c->source_len), kernel.blob) << target;
    EXPECT_NE((vk ? tgc_cuda_candidate_parse : tgc_vk_candidate_parse)(payload.data(), payload.size(), c.get(), err,
                                                                       sizeof err),
              0)
        << target << ": the other API's candidate";
  }
  auto c = std::make_unique<tgc_cl_candidate>();
  char err[256] = "";
  std::string ragged = "tgc-cuda 1\nkernel k\nglobal 100\nlocal 64\nbuffer 400 11\nptx\n.version 8.0";
  EXPECT_NE(tgc_cuda_candidate_parse(ragged.data(), ragged.size(), c.get(), err, sizeof err), 0);
  EXPECT_NE(std::string(err).find("not a multiple"), std::string::npos) << err;
  std::string no_block = "tgc-cuda 1\nkernel k\nglobal 128\nlocal 0\nbuffer 400 11\nptx\n.version 8.0";
  EXPECT_NE(tgc_cuda_candidate_parse(no_block.data(), no_block.size(), c.get(), err, sizeof err), 0);
  EXPECT_NE(std::string(err).find("needs a work-group size"), std::string::npos) << err;
}

// The OpenCL side of the agent, on whatever device this machine has (pocl in CI).
class AgentOpenCl : public ::testing::Test {
 protected:
  void SetUp() override {
    agent_ = std::make_unique<AgentClient>(agent_command(), /*timeout_s=*/20);
    if (agent_->greeting().api("opencl").name.empty())
      GTEST_SKIP() << "no OpenCL device: " << agent_->greeting().api("opencl").why;
  }
  std::unique_ptr<AgentClient> agent_;
};

TEST_F(AgentOpenCl, TimesAKernelWithTheCpuPathsInputs) {
  std::string why;
  std::string twice =
      "tgc-cl 1\nkernel twice\nglobal 1024\nlocal 64\nbuffer 4096 11\nbuffer 4096 11\nsource\n"
      "__kernel void twice(__global float* restrict b0, __global const float* restrict b1) {\n"
      "  long i = get_global_id(0); b0[i] = 2 * b1[i]; }\n";
  auto cl = agent_->measure("time-cl", twice, 50, 5, why);
  ASSERT_TRUE(cl) << why;
  EXPECT_GT(cl->min_us, 0);
  EXPECT_LE(cl->min_us, cl->median_us);
  auto cpu = agent_->time(slurp(TGC_CANDIDATE_GOOD), 50, 5, why);  // the same out = 2 * in on the CPU
  ASSERT_TRUE(cpu) << why;
  EXPECT_EQ(cl->out_sum, cpu->out_sum) << "the same inputs on both paths";
  EXPECT_EQ(cl->out_abs_sum, cpu->out_abs_sum);

  // A kernel that does not build, or a garbled candidate, is that candidate's error only.
  std::string broken = twice;
  broken.replace(broken.find("2 * b1[i]"), 9, "2 * b7[i]");
  EXPECT_FALSE(agent_->measure("time-cl", broken, 50, 5, why));
  EXPECT_NE(why.find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos) << why;
  EXPECT_FALSE(agent_->measure("time-cl", "tgc-cl 1\nkernel twice\n", 50, 5, why));
  EXPECT_NE(why.find("bad OpenCL candidate"), std::string::npos) << why;
  EXPECT_FALSE(
      agent_->measure("time-cl", std::string(twice).replace(twice.find("local 64"), 8, "local 9999"), 50, 5, why));
  EXPECT_EQ(agent_->restarts(), 0) << why;
  EXPECT_TRUE(agent_->measure("time-cl", twice, 50, 5, why)) << why;
}

TEST_F(AgentOpenCl, WorkGroupsAndGroupReducesComputeTheSameMatmul) {
  Graph g;
  Kernel k = matmul_kernel(g, 8, 64, 96, "x");
  std::string why;
  auto ref = agent_->measure("time-cl", opencl_candidate(g, opencl_program(g, k, {})), 20, 2, why);
  ASSERT_TRUE(ref) << why;
  EXPECT_GT(ref->out_abs_sum, 0);
  std::vector<std::vector<Opt>> variants = {
      {{OptOp::Local, 1, 32}},
      {{OptOp::Local, 1, 8}, {OptOp::Group, 2, 16}},
      {{OptOp::Upcast, 1, 4}, {OptOp::Unroll, 2, 4}, {OptOp::Local, 0, 8}},
  };
  for (const auto& opts : variants) {
    auto t = agent_->measure("time-cl", opencl_candidate(g, opencl_program(g, k, opts)), 20, 2, why);
    ASSERT_TRUE(t) << opts_str(opts) << ": " << why;
    EXPECT_NEAR(t->out_sum, ref->out_sum, 1e-4 * ref->out_abs_sum) << opts_str(opts);
    EXPECT_NEAR(t->out_abs_sum, ref->out_abs_sum, 1e-4 * ref->out_abs_sum) << opts_str(opts);
  }
}

TEST_F(AgentOpenCl, GroupsOfTwoReducesFoldOnlyTheirOwnThreads) {
  // Softmax: a max and a sum over the row, each with its own reduce range. With both split by
  // GROUP, each reduce must fold across its own GROUP threads only (found by --beam on digits_cnn:
  // the sum came out twice as large).
  Graph g;
  Tensor x = Tensor::input(g, "x", DType::F32, {3, 16});
  Schedule s = schedule(g, {x.softmax(-1).uop()});
  ASSERT_EQ(s.kernels.size(), 1u);
  const Kernel& k = s.kernels[0];
  ASSERT_EQ(kernel_axes(k).size(), 4u) << "2 global axes, 2 reduce axes";
  std::string why;
  auto ref = agent_->measure("time-cl", opencl_candidate(g, opencl_program(g, k, {})), 20, 2, why);
  ASSERT_TRUE(ref) << why;
  EXPECT_NEAR(ref->out_sum, 3, 1e-4) << "each of the 3 rows sums to 1";
  for (const auto& opts :
       std::vector<std::vector<Opt>>{{{OptOp::Group, 2, 4}, {OptOp::Group, 3, 2}},
                                     {{OptOp::Group, 3, 8}, {OptOp::Local, 0, 3}, {OptOp::Group, 2, 2}}}) {
    auto t = agent_->measure("time-cl", opencl_candidate(g, opencl_program(g, k, opts)), 20, 2, why);
    ASSERT_TRUE(t) << opts_str(opts) << ": " << why;
    EXPECT_NEAR(t->out_sum, ref->out_sum, 1e-4) << opts_str(opts);
  }
}

}  // namespace
}  // namespace tgc
