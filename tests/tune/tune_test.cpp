// Tuning: the BEAM search on a fake clock (dropped candidates, the cap), the tuning key, the
// SQLite cache, and the agent client against a real tgc-agent running misbehaving candidates.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "ir/error.h"
#include "ir/tensor.h"
#include "passes/beam.h"
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
      if (crash) out.push_back(std::nullopt);
      else out.push_back(100.0 / double(std::min<int64_t>(p, 16)) + double(p > 16 ? p : 0) + 0.01 * double(opts.size()));
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
  EXPECT_TRUE(std::any_of(r.opts.begin(), r.opts.end(), [](const Opt& o) { return o.op == OptOp::Padto; })) << opts_str(r.opts);
  EXPECT_NO_THROW(apply_opts(g, k, r.opts, t));
}

TEST(BeamSearch, GpuMovesSplitReducesAcrossTheWorkGroupBothWays) {
  Graph g;
  Kernel k = matmul_kernel(g, 16, 32, 24, "w");
  std::vector<std::vector<Opt>> moves = candidate_moves(g, k, {}, opencl_profile());
  auto offered = [&](OptOp op) {
    return std::any_of(moves.begin(), moves.end(), [&](const std::vector<Opt>& m) { return m.back().op == op; });
  };
  EXPECT_TRUE(offered(OptOp::Local));
  EXPECT_TRUE(offered(OptOp::Group));
  EXPECT_TRUE(offered(OptOp::GroupTop));
  moves = candidate_moves(g, k, {}, TargetProfile{});
  EXPECT_FALSE(offered(OptOp::Local)) << "a CPU has no work-groups";
  EXPECT_FALSE(offered(OptOp::GroupTop)) << "a CPU has no work-groups";
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
  std::string path = (std::filesystem::temp_directory_path() / ("tgc-cache-test-" + std::to_string(getpid())) / "t.sqlite").string();
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

}  // namespace
}  // namespace tgc
