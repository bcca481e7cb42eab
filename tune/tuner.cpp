#include "tune/tuner.h"

#include <unistd.h>

#include <atomic>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "codegen/dialect.h"
#include "ir/error.h"
#include "passes/lower.h"
#include "tune/agent_client.h"
#include "tune/tune_cache.h"

namespace tgc {

namespace {
namespace fs = std::filesystem;
constexpr int kMaxDropMessages = 5;  // then only counted

std::string ms(double us) {
  char buf[32];
  if (us < 1000)
    std::snprintf(buf, sizeof buf, "%.3g us", us);
  else
    std::snprintf(buf, sizeof buf, "%.4g ms", us / 1000);
  return buf;
}

std::string hex(size_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016zx", v);
  return buf;
}

// Same output as the reference, up to the rounding of a reordered reduce.
bool same_output(const AgentTiming& ref, const AgentTiming& t) {
  if (!std::isfinite(ref.out_sum) || !std::isfinite(ref.out_abs_sum)) return true;  // nothing to compare against
  double tol = 1e-3 * std::max(ref.out_abs_sum, 1e-30);
  return std::abs(t.out_sum - ref.out_sum) <= tol && std::abs(t.out_abs_sum - ref.out_abs_sum) <= tol;
}

// Builds and times the candidates of one kernel: CPU kernels as shared objects, GPU kernels as
// OpenCL C (tools/tgc-agent/cl_candidate.h); timing one at a time on the agent.
class CandidateTimer {
 public:
  CandidateTimer(Graph& g, const Kernel& k, const ResolvedTarget& t, AgentClient& agent, const TuneOptions& o,
                 const fs::path& workdir, TuneReport& rep, int& drop_messages)
      : g_(g), k_(k), t_(t), agent_(agent), o_(o), workdir_(workdir), rep_(rep), drop_messages_(drop_messages) {}

  std::vector<std::optional<double>> operator()(const std::vector<std::vector<Opt>>& batch) {
    size_t n = batch.size();
    std::vector<std::string> payload(n), why(n);
    auto t0 = std::chrono::steady_clock::now();
    build_candidates(batch, payload, why);
    auto t1 = std::chrono::steady_clock::now();
    rep_.build_s += std::chrono::duration<double>(t1 - t0).count();

    std::vector<std::optional<double>> times(n);
    const char* request = dialect_ops(t_.desc->dialect).agent_request;
    for (size_t i = 0; i < n; ++i) {
      std::optional<AgentTiming> t;
      if (!payload[i].empty()) t = agent_.measure(request, payload[i], o_.max_iters, o_.budget_ms, why[i]);
      if (t && !ref_) ref_ = t;
      if (t && !same_output(*ref_, *t)) {
        ++rep_.wrong;
        why[i] = "computes a different output (checksum " + std::to_string(t->out_sum) + ", expected " +
                 std::to_string(ref_->out_sum) + ")";
        log("beam: warning: " + k_.name + " " + opts_str(batch[i]) + ": " + why[i]);
        continue;
      }
      if (t) {
        times[i] = t->min_us;
        continue;
      }
      ++rep_.dropped;
      if (drop_messages_++ < kMaxDropMessages)
        log("beam: " + k_.name + " [" + opts_str(batch[i]) + "] dropped: " + why[i]);
    }
    rep_.timing_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    return times;
  }

 private:
  // Candidates are lowered on this thread (it grows the graph), then built by the dialect on
  // `jobs` threads (they only read it): one-kernel shared objects for CPUs (LLVM, the slow part),
  // kernel source for GPUs (compiled by the agent's driver, not timed).
  void build_candidates(const std::vector<std::vector<Opt>>& batch, std::vector<std::string>& payload,
                        std::vector<std::string>& why) {
    size_t n = batch.size();
    std::vector<std::optional<LoopProgram>> programs(n);
    for (size_t i = 0; i < n; ++i) {
      try {
        programs[i] = lower_kernel(g_, k_, batch[i], t_).program;
      } catch (const Error& e) {
        why[i] = e.what();
      }
    }
    const DialectOps& dialect = dialect_ops(t_.desc->dialect);
    std::atomic<size_t> next{0};
    auto build = [&] {
      for (size_t i; (i = next++) < n;) {
        if (!programs[i]) continue;
        try {
          payload[i] = dialect.candidate(g_, *programs[i], t_, workdir_.string());
        } catch (const std::exception& e) {
          why[i] = e.what();
        }
      }
    };
    int jobs = o_.jobs > 0 ? o_.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (int j = 1; j < std::min<int>(jobs, int(n)); ++j) pool.emplace_back(build);
    build();
    for (auto& th : pool) th.join();
  }

  void log(const std::string& line) {
    if (o_.log) *o_.log << (o_.live ? "\r\033[K" : "") << line << "\n" << std::flush;
  }

  Graph& g_;
  const Kernel& k_;
  const ResolvedTarget& t_;
  AgentClient& agent_;
  const TuneOptions& o_;
  fs::path workdir_;
  TuneReport& rep_;
  int& drop_messages_;
  std::optional<AgentTiming> ref_;  // the first candidate that ran: the others must agree with it
};
}  // namespace

Tuner::Tuner(TuneOptions o) : o_(std::move(o)) {}
Tuner::~Tuner() = default;

std::string summary_line(const TuneReport& r) {
  std::ostringstream s;
  s << "beam: " << r.kernels << " kernels (" << r.distinct << " distinct): " << r.searched << " searched, "
    << r.cache_hits << " from the cache; " << r.candidates << " candidates timed, " << r.dropped << " dropped";
  if (r.wrong) s << ", " << r.wrong << " WRONG";
  char secs[160];
  std::snprintf(secs, sizeof secs, "%.1f s (building %.1f s, timing %.1f s)", r.seconds, r.build_s, r.timing_s);
  s << "; " << secs << "; kernel time " << ms(r.tuned_us) << " (heuristic " << ms(r.heuristic_us) << ") on "
    << r.device;
  return s.str();
}

// The device that times the candidates (into report_.device), and the tuning cache's target key.
// GPU kernel code is the same for any host: there the device is what matters.
std::string Tuner::cache_target(const AgentClient& agent, const ResolvedTarget& t) {
  const DialectOps& ops = dialect_ops(t.desc->dialect);
  if (!ops.agent_api) {
    report_.device = agent.device();
    if (agent.arch() != arch_of(t.triple))
      throw Error("--beam: the tuning agent runs on " + agent.arch() + " but the target is " + t.triple +
                  " (use --tune-via to reach a matching machine)");
    return "cpu " + t.triple + " " + t.cpu;
  }
  const AgentDevice& d = agent.greeting().api(ops.agent_api);
  if (d.name.empty())
    throw Error("--beam: tgc-agent on " + agent.device() + " has no " + ops.api_title + " device (" + d.why +
                "): --beam for " + t.desc->name + " needs one (use --tune-via to reach a machine with it)");
  report_.device = d.name;
  std::string target = std::string(ops.agent_api) + " " + t.desc->name + (ops.key_names_device ? " " + d.name : "");
  if (t.profile.tf32) target += " tf32";  // actions that fp32 cannot take
  return target;
}

// The tuning cache, or none: a corrupt, locked or unwritable cache costs the reuse, not the compile.
void Tuner::drop_cache(const Error& e) {
  std::cerr << "tgc: warning: " << e.what() << "; tuning without the cache\n";
  cache_.reset();
}

void Tuner::log(const std::string& line, bool transient) const {
  if (!o_.log) return;
  if (o_.live)
    *o_.log << "\r\033[K" << line << (transient ? "" : "\n") << std::flush;
  else if (!transient)
    *o_.log << line << "\n" << std::flush;
}

// A cached choice that this compiler can still apply, or none.
std::optional<Tuner::Choice> Tuner::cached(Graph& g, const Kernel& k, const ResolvedTarget& t,
                                           const std::string& target, const std::string& hkey) {
  std::optional<TuneEntry> hit;
  try {
    if (cache_) hit = cache_->find(target, report_.device, hkey);
  } catch (const Error& e) {
    drop_cache(e);
  }
  if (!hit) return std::nullopt;
  try {
    std::vector<Opt> opts = parse_opts(hit->opts);
    apply_opts(g, k, opts, t.profile);  // still legal for this compiler?
    ++report_.cache_hits;
    return Choice{opts, hit->us, hit->heuristic_us};
  } catch (const Error&) {
    return std::nullopt;  // stale entry: search again and replace it
  }
}

// Kernel n of `count` (distinct): the heuristic's actions where it reads run-time dims, a cached
// choice, or a BEAM search timed by the agent (stored in the cache).
Tuner::Choice Tuner::tune_kernel(Graph& g, const Kernel& k, const ResolvedTarget& t, AgentClient& agent,
                                 const std::string& target, const std::string& hkey, const std::string& prefix,
                                 const fs::path& workdir, int& drop_messages) {
  // Kernels that read run-time dims (VARs) keep the heuristic: the agent's buffers would give
  // their loops arbitrary lengths.
  if (std::count(k.inputs.begin(), k.inputs.end(), g.vars_buffer())) {
    log(prefix + "reads run-time dims, keeping the heuristic's opts");
    return {heuristic_opts(g, k, t.profile), -1, -1};
  }
  if (std::optional<Choice> hit = cached(g, k, t, target, hkey)) return *hit;
  CandidateTimer timer(g, k, t, agent, o_, workdir, report_, drop_messages);
  BeamResult r = beam_search(g, k, t.profile, o_.beam, std::ref(timer), [&](int round, int tried, double best) {
    log(prefix + "round " + std::to_string(round) + ", " + std::to_string(tried) + " candidates, best " + ms(best),
        true);
  });
  ++report_.searched;
  report_.candidates += r.tried;
  if (r.us < 0) {
    log(prefix + std::to_string(r.tried) + " candidates, all dropped: keeping the heuristic's " + opts_str(r.opts));
    return {r.opts, -1, -1};
  }
  try {
    if (cache_) cache_->store(target, report_.device, hkey, {opts_str(r.opts), r.us, r.heuristic_us}, k.name);
  } catch (const Error& e) {
    drop_cache(e);
  }
  log(prefix + std::to_string(r.tried) + " candidates, best " + ms(r.us) + " (heuristic " +
      (r.heuristic_us < 0 ? std::string("dropped") : ms(r.heuristic_us)) + ")" +
      (r.opts.empty() ? "" : ": " + opts_str(r.opts)));
  return {r.opts, r.us, r.heuristic_us};
}

std::vector<std::vector<Opt>> Tuner::choose(Graph& g, const std::vector<Kernel>& kernels, const ResolvedTarget& t) {
  auto t0 = std::chrono::steady_clock::now();
  report_ = TuneReport{};
  report_.kernels = kernels.size();
  report_.cache_path = o_.cache_path.empty() ? TuneCache::default_path() : o_.cache_path;
  try {
    cache_ = std::make_unique<TuneCache>(report_.cache_path);
  } catch (const Error& e) {
    drop_cache(e);
  }
  AgentClient agent(o_.agent_command, o_.timeout_s);
  std::string target = cache_target(agent, t);

  // Distinct kernels in order of first use.
  std::vector<size_t> key(kernels.size());
  std::map<size_t, size_t> first;  // key -> index of its first kernel
  std::vector<size_t> order;
  for (size_t i = 0; i < kernels.size(); ++i) {
    key[i] = tuning_key(g, kernels[i]);
    if (first.emplace(key[i], i).second) order.push_back(i);
  }
  report_.distinct = order.size();

  fs::path workdir = fs::temp_directory_path() / ("tgc-tune-" + std::to_string(getpid()));
  fs::create_directories(workdir);
  std::map<size_t, Choice> chosen;
  int drop_messages = 0;
  try {
    for (size_t n = 0; n < order.size(); ++n) {
      const Kernel& k = kernels[order[n]];
      std::string prefix =
          "beam: kernel " + std::to_string(n + 1) + "/" + std::to_string(order.size()) + " " + k.name + ": ";
      chosen[key[order[n]]] = tune_kernel(g, k, t, agent, target, hex(key[order[n]]), prefix, workdir, drop_messages);
    }
  } catch (...) {
    std::error_code ec;
    fs::remove_all(workdir, ec);
    throw;
  }
  std::error_code ec;
  fs::remove_all(workdir, ec);
  cache_.reset();

  std::vector<std::vector<Opt>> out;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const Choice& c = chosen.at(key[i]);
    out.push_back(c.opts);
    if (c.us >= 0) report_.tuned_us += c.us, report_.heuristic_us += c.heuristic_us >= 0 ? c.heuristic_us : c.us;
  }
  report_.agent_restarts = agent.restarts();
  report_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log(summary_line(report_));
  return out;
}

}  // namespace tgc
