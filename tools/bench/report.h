// The benchmark's results: one row per case and thread count, printed as a text table and
// written as the generated section of docs/performance.md.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "tools/bench/analysis.h"

namespace tgc::bench {

struct Timing {
  double median_ms = 0, min_ms = 0;
};

struct Row {
  std::string name, inputs;
  bool micro = false;
  int threads = 1;
  std::string metric = "flops";  // flops: GFLOP/s against sgemm; bytes: GB/s against memcpy
  std::string failure;           // why a side has no time ("compile failed: ...")
  bool tgc_failed = false;       // tgc compiled the model but its run failed or was wrong
  std::optional<Timing> tgc, ort;
  bool tgc_single_run = false;  // tgc's time is its checking run's wall time (too slow for --bench)
  int iters = 0, rounds = 0;
  double compile_s = 0;
  std::optional<double> flops;  // per inference
  double bytes = 0;             // inputs + outputs, per inference
  double ceiling = 0;           // GFLOP/s or GB/s
  std::string ceiling_name;     // "sgemm 1024", "memcpy"
  std::optional<Agreement> agreement;
  // tgc-bench --beam: the artifact compiled with --beam=N, a third side.
  bool beam_tried = false;
  std::optional<Timing> beam;
  bool beam_single_run = false;
  double beam_compile_s = 0;
  std::optional<Agreement> beam_agreement;

  // Throughput at a latency: GFLOP/s or GB/s by the row's metric; nullopt when unknown.
  std::optional<double> rate(double ms) const;
};

struct Ceiling {
  std::string name;  // "sgemm 1024", "memcpy 256 MiB"
  int threads = 1;
  double value = 0;  // GFLOP/s or GB/s
  std::string unit;
  int iters = 0;
  double median_ms = 0;
};

struct RunInfo {
  std::string command, date, commit, machine, ort_version, openblas, load_before, load_after, tolerance;
};

// Fixed-width text, for the terminal.
std::string text_table(const std::vector<Row>& rows);
// The generated markdown: run facts, ceilings and one table per thread count.
std::string markdown(const RunInfo& info, const std::vector<Ceiling>& ceilings, const std::vector<Row>& rows);
// tgc-bench --zoo: one row per case, tgc ms, ort ms and their ratio at each thread count.
std::string zoo_markdown(const RunInfo& info, const std::vector<Row>& rows);
// Replaces the generated section `name` ("results" or "zoo") of `path` (between its markers), or
// appends it, or creates the file.
void write_markdown(const std::string& path, const std::string& section, const std::string& name);

}  // namespace tgc::bench
