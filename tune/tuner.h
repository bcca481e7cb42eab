// Kernel tuning for `tgc compile --beam=N`: for each distinct kernel, a cached result or a BEAM
// search whose candidates are built in parallel (codegen/kernel_library) and timed one at a time
// on the target by tgc-agent (tune/agent_client). Plugs into CompileOptions::choose_opts.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "target/targets.h"
#include "passes/beam.h"

namespace tgc {

class AgentClient;
struct Error;
class TuneCache;

struct TuneOptions {
  BeamOptions beam;
  std::string agent_command;    // starts tgc-agent where the artifact will run (sh -c)
  std::string cache_path;       // default: TuneCache::default_path()
  double timeout_s = 10;        // per candidate, after which it is dropped and the agent restarted
  int jobs = 0;                 // candidates built at once; 0: one per core
  int max_iters = 200;          // timed runs per candidate, at most ...
  double budget_ms = 20;        // ... and until this much time has passed (at least 3 runs)
  std::ostream* log = nullptr;  // progress and summary lines
  bool live = false;            // also rewrite a progress line after every round (a terminal)
};

struct TuneReport {
  size_t kernels = 0, distinct = 0, searched = 0, cache_hits = 0;
  int candidates = 0, dropped = 0, wrong = 0, agent_restarts = 0;
  double seconds = 0, build_s = 0, timing_s = 0;  // wall time: all, building candidates, timing them
  double tuned_us = 0, heuristic_us = 0;          // sum over the model's kernels (one thread)
  std::string device, cache_path;
};
std::string summary_line(const TuneReport& r);

class Tuner {
 public:
  explicit Tuner(TuneOptions o);
  ~Tuner();
  // The actions for each of `kernels`, in order.
  std::vector<std::vector<Opt>> choose(Graph& g, const std::vector<Kernel>& kernels, const ResolvedTarget& t);
  const TuneReport& report() const { return report_; }

 private:
  struct Choice {
    std::vector<Opt> opts;
    double us, heuristic_us;  // -1: not timed
  };
  std::string cache_target(const AgentClient& agent, const ResolvedTarget& t);
  std::optional<Choice> cached(Graph& g, const Kernel& k, const ResolvedTarget& t, const std::string& target,
                               const std::string& hkey);
  Choice tune_kernel(Graph& g, const Kernel& k, const ResolvedTarget& t, AgentClient& agent, const std::string& target,
                     const std::string& hkey, const std::string& prefix, const std::filesystem::path& workdir,
                     int& drop_messages);
  void drop_cache(const Error& e);
  void log(const std::string& line, bool transient = false) const;

  TuneOptions o_;
  TuneReport report_;
  std::unique_ptr<TuneCache> cache_;  // during choose
};

}  // namespace tgc
