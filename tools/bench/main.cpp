// tgc-bench: tgc's compiled artifacts against onnxruntime (onnxruntime-node, CPU), side by side
// in one process tree on the same inputs and thread count, on every model of the model
// directories and on generated microbenchmarks; prints median latencies, the tgc/onnxruntime
// ratio and GFLOP/s or GB/s against the machine's ceilings measured in the same run (OpenBLAS
// sgemm, memcpy). Outputs of both sides are compared, so a fast wrong result is flagged.
// Usage: tgc-bench --help. tools/scripts/bench.sh builds what it needs and runs it.
#include <ctime>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "ir/error.h"
#include "tools/bench/analysis.h"
#include "tools/bench/cases.h"
#include "tools/bench/process.h"
#include "tools/bench/report.h"

namespace fs = std::filesystem;
using namespace tgc;
using namespace tgc::bench;

namespace {

struct Options {
  std::vector<int> threads = {1};
  int iters = 0;  // 0: adaptive
  double budget_s = 1;
  int rounds = 2;
  std::string filter;
  bool models = true, micro = true;
  std::vector<std::string> model_dirs;
  std::string markdown, work, tgc, ort, ceilings;
  double timeout_s = 600;
  double tol = 1e-3;
  int beam = 0;       // also time an artifact compiled with --beam=N (tuning cache in the work dir)
  int batch = 0;      // models at this batch size, their batch dim left dynamic in tgc
  bool fp16 = false;  // also the fp16 twins of kTwins[0]
  bool int8 = false;  // also the dynamically quantized twins of kTwins[1]
  bool zoo = false;   // the model zoo (zoo_models.py) instead of the model directories and micro_models.py
};

// The peer runs under Python's onnxruntime where --ort names ort_run.py (machines without Node).
bool ort_is_python(const Options& o) { return fs::path(o.ort).extension() == ".py"; }

const char* kUsage =
    "usage: tgc-bench [options]\n"
    "  --threads LIST     thread counts, e.g. 1, 1,2 or all (one per online core); default 1\n"
    "  --iters N          timed runs per side and round (default: as many as fit in --budget, 3 to 1000)\n"
    "  --budget SECONDS   time per side and round when --iters is not given (default 1)\n"
    "  --rounds R         alternate tgc and onnxruntime R times and keep each side's best median\n"
    "                     (default 2; 1 where three runs already exceed the budget)\n"
    "  --filter REGEX     only the cases whose name matches (ECMAScript regex, searched)\n"
    "  --beam N           also compile with tgc --beam=N and time that artifact as a third side\n"
    "                     (tuning cache: <work>/tune.sqlite, so a rerun searches nothing)\n"
    "  --batch N          the models at batch size N, compiled with the batch dim left to run time\n"
    "                     (models whose nodes mix samples are reported, not run); implies --models-only\n"
    "  --fp16             also fp16 twins of cls, det and embedding_model (weights and activations\n"
    "                     in f16, written by tools/bench/fp16_models.py), checked to 1e-2 x max|ort|\n"
    "  --int8             also the dynamically quantized twin of embedding_model (DynamicQuantizeLinear\n"
    "                     + ConvInteger, written by tools/bench/int8_models.py)\n"
    "  --zoo              the model zoo instead: 20 architectures at their real sizes with random weights,\n"
    "                     fp16 and int8 twins of some, and conv microbenchmarks (tools/bench/zoo_models.py);\n"
    "                     --markdown writes its own section (\"zoo\"), no ceilings are measured\n"
    "  --models-only      only the models; --micro-only: only the microbenchmarks\n"
    "  --models-dir DIR   a model directory (repeatable; default: models/ and ../shared/models/real/)\n"
    "  --markdown FILE    write the results section of FILE (docs/performance.md) with the command line\n"
    "  --tol T            outputs agree when max|tgc - ort| <= T * max|ort| per output (default 1e-3)\n"
    "  --timeout SECONDS  limit for each command it runs (default 600)\n"
    "  --work DIR         scratch directory (default: <build>/bench)\n"
    "  --tgc PATH, --ort PATH (ort_run.js; ort_run.py: Python's onnxruntime through python3),\n"
    "  --ceilings PATH (bench-ceilings): override the defaults\n"
    "Exit status 1 when tgc's outputs disagree with onnxruntime's or a compiled artifact fails to run.\n";

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "tgc-bench: error: " << msg << "\n";
  std::exit(1);
}

int positive(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    int n = std::stoi(v, &used);
    if (used == v.size() && n > 0) return n;
  } catch (const std::exception&) {
  }
  die(flag + " needs a positive integer, got '" + v + "'");
}

double positive_real(const std::string& flag, const std::string& v) {
  try {
    size_t used = 0;
    double d = std::stod(v, &used);
    if (used == v.size() && d > 0) return d;
  } catch (const std::exception&) {
  }
  die(flag + " needs a positive number, got '" + v + "'");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else if (a == "--threads") {
      std::string v = value();
      o.threads.clear();
      std::istringstream in(v);
      for (std::string t; std::getline(in, t, ',');)
        o.threads.push_back(t == "all" ? int(std::max(1u, std::thread::hardware_concurrency())) : positive(a, t));
      if (o.threads.empty()) die("--threads needs a list");
    } else if (a == "--iters") {
      o.iters = positive(a, value());
    } else if (a == "--budget") {
      o.budget_s = positive_real(a, value());
    } else if (a == "--rounds") {
      o.rounds = positive(a, value());
    } else if (a == "--beam") {
      o.beam = positive(a, value());
    } else if (a == "--batch") {
      o.batch = positive(a, value());
      o.micro = false;
    } else if (a == "--filter") {
      o.filter = value();
    } else if (a == "--fp16") {
      o.fp16 = true;
    } else if (a == "--int8") {
      o.int8 = true;
    } else if (a == "--zoo") {
      o.zoo = true;
    } else if (a == "--models-only") {
      o.micro = false;
    } else if (a == "--micro-only") {
      o.models = false;
    } else if (a == "--models-dir") {
      o.model_dirs.push_back(value());
    } else if (a == "--markdown") {
      o.markdown = value();
    } else if (a == "--tol") {
      o.tol = positive_real(a, value());
    } else if (a == "--timeout") {
      o.timeout_s = positive_real(a, value());
    } else if (a == "--work") {
      o.work = value();
    } else if (a == "--tgc") {
      o.tgc = value();
    } else if (a == "--ort") {
      o.ort = value();
    } else if (a == "--ceilings") {
      o.ceilings = value();
    } else {
      die("unknown option '" + a + "' (try --help)");
    }
  }
  if (!o.models && !o.micro) die("--models-only and --micro-only exclude each other");
  if (o.zoo && (o.batch || o.fp16 || o.int8 || !o.model_dirs.empty()))
    die("--zoo runs the zoo alone (its twins included): no --batch, --fp16, --int8 or --models-dir");
  return o;
}

// The value of the first "key : value" line of `path` whose key starts with `key`.
std::string field_of(const std::string& path, const std::string& key) {
  std::ifstream f(path);
  for (std::string line; std::getline(f, line);) {
    size_t colon = line.find(':');
    if (line.rfind(key, 0) != 0 || colon == std::string::npos) continue;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// An artifact of one case and how its compile went.
struct Artifact {
  std::string path, error;
  double compile_s = 0;
};

// What is done once per case, whatever the thread count: inputs, the artifacts, the FLOP count.
struct Prepared {
  std::string dir;
  Artifact plain, beam;  // beam: only with --beam
  InputArgs inputs;
  std::optional<double> flops;
};

void progress(const std::string& msg) { std::cerr << msg << std::flush; }

Artifact compile(const Case& c, const Options& o, const std::string& dir, const std::string& path,
                 const std::vector<std::string>& extra) {
  std::vector<std::string> cmd = {o.tgc, "compile", c.model, "--target=cpu", "-o", path};
  for (const auto& s : c.input_shape_args()) cmd.push_back(s);
  cmd.insert(cmd.end(), extra.begin(), extra.end());
  ProcessResult r = run_process(cmd, dir, o.timeout_s);
  Artifact a{path, "", r.wall_s};
  if (r.exit_code != 0) {
    std::string line = r.first_error_line();
    if (line.rfind("tgc: error: ", 0) == 0) line = line.substr(12);
    if (line.rfind(c.model + ": ", 0) == 0) line = line.substr(c.model.size() + 2);
    a.error = "compile failed: " + line;
  }
  return a;
}

Prepared prepare(const Case& c, const Options& o) {
  Prepared p;
  p.dir = o.work + "/cases/" + c.name;
  fs::create_directories(p.dir);
  if (!c.error.empty()) {
    p.plain.error = c.error;
    return p;
  }
  p.inputs = write_inputs(c, p.dir + "/inputs");
  progress("compile ");
  p.plain = compile(c, o, p.dir, p.dir + "/" + c.name, {});
  if (o.beam) {
    progress("compile --beam ");
    p.beam = compile(c, o, p.dir, p.dir + "/" + c.name + "_beam",
                     {"--beam=" + std::to_string(o.beam), "--tune-cache=" + o.work + "/tune.sqlite"});
  }
  p.flops = count_flops(c);
  return p;
}

std::optional<Timing> timing_of(const ProcessResult& r) {
  auto med = json_number(r.out, "median_ms"), mn = json_number(r.out, "min_ms");
  if (r.exit_code != 0 || !med || !mn) return std::nullopt;
  return Timing{*med, *mn};
}

// One side of a case: an artifact (tgc, tgc --beam) or onnxruntime, and what it gave.
struct Side {
  std::string label;  // "tgc", "beam", "ort"
  std::vector<std::string> cmd;
  std::string out;  // output directory of the checking run
  bool ok = false;
  double est_ms = 0;  // time per inference from the checking run, sets the number of timed runs
  std::optional<Timing>* best;
  bool* single_run = nullptr;
};

// Runs one case at one thread count: a checking run of each side (tgc's outputs compared with
// onnxruntime's), then `rounds` alternating timed runs of each side.
Row bench_case(const Case& c, const Prepared& p, int threads, const Options& o) {
  Row row;
  row.name = c.name;
  row.inputs = c.shape_summary();
  row.micro = c.micro;
  row.threads = threads;
  row.metric = c.metric;
  row.flops = p.flops;
  row.compile_s = p.plain.compile_s;
  row.beam_compile_s = p.beam.compile_s;
  row.beam_tried = o.beam > 0;
  std::string t = std::to_string(threads);
  auto with = [](std::vector<std::string> cmd, std::initializer_list<std::string> extra) {
    cmd.insert(cmd.end(), extra);
    return cmd;
  };
  auto artifact_side = [&](const std::string& label, const Artifact& a, std::optional<Timing>& best, bool& single) {
    Side s{label, {a.path}, p.dir + "/" + label + "_out_t" + t, a.error.empty() && !a.path.empty(), 0, &best, &single};
    s.cmd.insert(s.cmd.end(), p.inputs.tgc.begin(), p.inputs.tgc.end());
    s.cmd.insert(s.cmd.end(), {"--threads", t});
    if (!a.error.empty() && row.failure.empty()) row.failure = (label == "tgc" ? "" : label + ": ") + a.error;
    // A model tgc cannot compile is reported, not a failure; --beam failing where a plain compile works is.
    if (!a.error.empty() && label != "tgc" && p.plain.error.empty()) row.tgc_failed = true;
    return s;
  };
  std::vector<Side> sides = {artifact_side("tgc", p.plain, row.tgc, row.tgc_single_run)};
  if (o.beam) sides.push_back(artifact_side("beam", p.beam, row.beam, row.beam_single_run));
  std::string runner = ort_is_python(o) ? "python3" : "node";
  Side ort{"ort", {runner, o.ort, c.model}, p.dir + "/ort_out_t" + t, c.error.empty(), 0, &row.ort};
  ort.cmd.insert(ort.cmd.end(), p.inputs.ort.begin(), p.inputs.ort.end());
  ort.cmd.insert(ort.cmd.end(), {"--threads", t});
  sides.push_back(ort);

  // Checking runs; they also estimate each side's time per inference, which sets the number
  // of timed runs (an artifact's from the wall time of one whole run, an upper bound, unless short).
  for (Side& s : sides) {
    if (!s.ok) continue;
    fs::remove_all(s.out);
    progress("check-" + s.label + " ");
    bool is_ort = &s == &sides.back();
    ProcessResult r = run_process(is_ort ? with(s.cmd, {"-o", s.out, "--bench", "1"}) : with(s.cmd, {"-o", s.out}),
                                  p.dir, o.timeout_s);
    if (is_ort) {
      auto tm = timing_of(r);
      if (!tm && row.failure.empty()) row.failure = "onnxruntime failed: " + r.first_error_line();
      s.ok = bool(tm);
      s.est_ms = tm ? tm->median_ms : 0;
      continue;
    }
    if (r.exit_code != 0) {
      row.failure = s.label + " run failed: " + r.first_error_line();
      row.tgc_failed = true;
      s.ok = false;
      continue;
    }
    s.est_ms = r.wall_s * 1e3;
    // A whole run that cheap is mostly process start: calibrate with a short bench instead.
    if (s.est_ms * 20 < o.budget_s * 1e3)
      if (auto tm = timing_of(run_process(with(s.cmd, {"--bench", "3"}), p.dir, o.timeout_s))) s.est_ms = tm->median_ms;
  }
  if (sides.back().ok) {
    for (size_t i = 0; i + 1 < sides.size(); ++i) {
      if (!sides[i].ok) continue;
      Agreement ag = compare_outputs(sides[i].out, sides.back().out, std::max(o.tol, c.tol));
      (i == 0 ? row.agreement : row.beam_agreement) = ag;
      if (!ag.ok) row.tgc_failed = true;
    }
  }
  for (const Side& s : sides)
    if (s.ok && row.bytes == 0) row.bytes = io_bytes(c, s.out);

  double slowest = 0;
  for (const Side& s : sides)
    if (s.ok) slowest = std::max(slowest, s.est_ms);
  if (slowest == 0) return row;
  double budget_ms = o.budget_s * 1e3;
  row.iters = o.iters ? o.iters : int(std::clamp(budget_ms / std::max(slowest, 1e-3), 3.0, 1000.0));
  row.rounds = slowest * 3 > budget_ms && !o.iters ? 1 : o.rounds;
  // An artifact too slow for --bench (3 warm-up runs first) within --timeout is timed by its
  // checking run alone.
  for (Side& s : sides)
    if (s.ok && s.single_run && s.est_ms * (3 + row.iters) > 0.8 * o.timeout_s * 1e3) {
      *s.best = Timing{s.est_ms, s.est_ms};
      *s.single_run = true;
      s.ok = false;
    }
  std::string n = std::to_string(row.iters);
  for (int round = 0; round < row.rounds; ++round) {
    for (Side& s : sides) {
      if (!s.ok) continue;
      progress(s.label + "x" + n + " ");
      std::optional<Timing> tm = timing_of(run_process(with(s.cmd, {"--bench", n}), p.dir, o.timeout_s));
      if (!tm) {
        if (row.failure.empty()) row.failure = (s.label == "ort" ? "onnxruntime" : s.label) + " bench failed";
        if (s.label != "ort") row.tgc_failed = true;
        s.ok = false;
        s.best->reset();
        continue;
      }
      if (!*s.best || tm->median_ms < (*s.best)->median_ms) *s.best = tm;
    }
  }
  return row;
}

// Conversions of real models, as converters write them: written by a script into <work>/<suffix>,
// named <model>_<suffix>.onnx.
struct Twins {
  bool Options::* wanted;  // --fp16, --int8
  const char* suffix;
  const char* script;
  std::vector<const char*> models;
  // fp16: onnxruntime rounds to f16 after every op and tgc only where it stores. (int8 twins of
  // det are left out: a rounding flip of one quantized activation in its first layers reaches
  // the near-zero output of a random image as 20% of its range.)
  double tol;
};
const Twins kTwins[] = {
    {&Options::fp16,
     "fp16",
     "fp16_models.py",
     {"ch_ppocr_mobile_v2.0_cls_infer", "ch_PP-OCRv4_det_infer", "embedding_model"},
     1e-2},
    {&Options::int8, "int8", "int8_models.py", {"embedding_model"}, 1e-3},
};

// tools/bench/zoo_models.py's models, twins and conv microbenchmarks, in the order of its index
// ("FILE KIND" lines; KIND: model, fp16, int8 or micro). Every input shape is fixed.
std::vector<Case> zoo_cases(const Options& o, const std::string& root,
                            const std::function<bool(const std::string&)>& wanted) {
  std::string dir = o.work + "/zoo";
  progress("zoo_models.py " + dir + " ...\n");
  ProcessResult r = run_process({"/usr/bin/python3", root + "/tools/bench/zoo_models.py", dir}, o.work, o.timeout_s);
  if (r.exit_code != 0) die("zoo_models.py failed: " + r.first_error_line());
  std::vector<Case> cases;
  std::ifstream index(dir + "/index.txt");
  for (std::string line; std::getline(index, line);) {
    std::istringstream in(line);
    std::string file, kind;
    if (!(in >> file >> kind) || !wanted(fs::path(file).stem().string())) continue;
    if ((kind == "micro" && !o.micro) || (kind != "micro" && !o.models)) continue;
    cases.push_back(load_case(dir + "/" + file, {}, kind == "micro"));
    for (const Twins& t : kTwins)
      if (kind == t.suffix) cases.back().tol = t.tol;
  }
  return cases;
}

std::vector<Case> collect_cases(const Options& o, const std::string& root) {
  std::vector<Case> cases;
  InputTable table = read_input_table(root + "/tools/bench/inputs.txt");
  std::regex filter(o.filter.empty() ? "." : o.filter, std::regex::ECMAScript);
  auto wanted = [&](const std::string& name) { return std::regex_search(name, filter); };
  if (o.zoo) return zoo_cases(o, root, wanted);
  if (o.models) {
    std::vector<std::string> dirs = o.model_dirs;
    if (dirs.empty()) dirs = {root + "/models", root + "/../shared/models/real"};
    for (const auto& dir : dirs) {
      if (!fs::is_directory(dir)) {
        std::cerr << "tgc-bench: note: no model directory " << dir << ", skipped\n";
        continue;
      }
      for (const auto& file : onnx_files(dir)) {
        if (!wanted(fs::path(file).stem().string())) continue;
        auto it = table.find(fs::path(file).filename().string());
        cases.push_back(load_case(file, it == table.end() ? std::vector<std::string>{} : it->second, false));
        if (o.batch) cases.back() = with_batch(cases.back(), o.batch);
      }
    }
  }
  for (const Twins& t : kTwins) {
    if (!o.models || !(o.*t.wanted)) continue;
    std::string dir = o.work + "/" + t.suffix;
    std::vector<std::string> cmd = {"/usr/bin/python3", root + "/tools/bench/" + t.script, dir};
    for (const char* m : t.models) cmd.push_back(root + "/../shared/models/real/" + m + ".onnx");
    ProcessResult r = run_process(cmd, o.work, o.timeout_s);
    if (r.exit_code != 0) die(std::string(t.script) + " failed: " + r.first_error_line());
    for (const char* m : t.models) {
      std::string file = dir + "/" + m + "_" + t.suffix + ".onnx";
      if (!wanted(fs::path(file).stem().string())) continue;
      auto it = table.find(fs::path(file).filename().string());
      cases.push_back(load_case(file, it == table.end() ? std::vector<std::string>{} : it->second, false));
      cases.back().tol = t.tol;
    }
  }
  if (o.micro) {
    std::string dir = o.work + "/micro";
    ProcessResult r =
        run_process({"/usr/bin/python3", root + "/tools/bench/micro_models.py", dir}, o.work, o.timeout_s);
    if (r.exit_code != 0) die("micro_models.py failed: " + r.first_error_line());
    std::ifstream index(dir + "/index.txt");
    for (std::string file; std::getline(index, file);)
      if (!file.empty() && wanted(fs::path(file).stem().string()))
        cases.push_back(load_case(dir + "/" + file, {}, true));
  }
  return cases;
}

// When a case is FLOP-bound: sgemm at 256, 512, 1024, 2048 and every other matmul size in use
// (the best of them is the ceiling of FLOP-bound cases other than matmuls); when a case is
// bandwidth-bound: memcpy of 256 MiB.
std::vector<Ceiling> measure_ceilings(const std::vector<Case>& cases, int threads, const Options& o,
                                      std::string& openblas) {
  std::set<int64_t> sizes;
  bool bytes = false;
  for (const auto& c : cases) {
    if (c.metric == "bytes") {
      bytes = true;
    } else {
      sizes.insert({256, 512, 1024, 2048});
      if (c.sgemm_n) sizes.insert(c.sgemm_n);
    }
  }
  std::string list;
  for (int64_t n : sizes) list += (list.empty() ? "" : ",") + std::to_string(n);
  std::vector<std::string> cmd = {o.ceilings, "--threads", std::to_string(threads), "--budget",
                                  std::to_string(o.budget_s)};
  if (!list.empty()) cmd.insert(cmd.end(), {"--sgemm", list});
  if (bytes) cmd.insert(cmd.end(), {"--memcpy-mib", "256"});
  progress("ceilings at " + std::to_string(threads) + " thread(s) ...\n");
  ProcessResult r = run_process(cmd, o.work, o.timeout_s);
  if (r.exit_code != 0) die("bench-ceilings failed: " + r.first_error_line());
  std::vector<Ceiling> out;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    Ceiling c;
    c.threads = threads;
    c.iters = int(json_number(line, "iters").value_or(0));
    c.median_ms = json_number(line, "median_ms").value_or(0);
    if (line.find("\"sgemm\"") != std::string::npos) {
      c.name = "sgemm " + std::to_string(int64_t(json_number(line, "n").value_or(0)));
      c.value = json_number(line, "gflops").value_or(0);
      c.unit = "GFLOP/s";
    } else if (line.find("\"memcpy\"") != std::string::npos) {
      c.name = "memcpy " + std::to_string(int64_t(json_number(line, "mib").value_or(0))) + " MiB";
      c.value = json_number(line, "gbps").value_or(0);
      c.unit = "GB/s";
    } else if (line.find("\"openblas\"") != std::string::npos) {
      size_t a = line.find("\"config\": \"") + 11, core = line.find("\"core\": \"") + 9;
      openblas =
          line.substr(a, line.find('"', a) - a) + " (core " + line.substr(core, line.find('"', core) - core) + ")";
      continue;
    } else {
      continue;
    }
    out.push_back(c);
  }
  return out;
}

// A matmul is held against sgemm of its size, other FLOP-bound cases against the best sgemm,
// bandwidth-bound ones against memcpy.
void attach_ceiling(Row& row, const Case& c, const std::vector<Ceiling>& ceilings) {
  for (const auto& cl : ceilings) {
    if (cl.threads != row.threads) continue;
    bool match = row.metric == "bytes" ? cl.name.rfind("memcpy", 0) == 0
                 : c.sgemm_n           ? cl.name == "sgemm " + std::to_string(c.sgemm_n)
                                       : cl.name.rfind("sgemm", 0) == 0 && cl.value > row.ceiling;
    if (!match) continue;
    row.ceiling = cl.value;
    row.ceiling_name = c.sgemm_n || row.metric == "bytes" ? cl.name : "best " + cl.name;
  }
}

std::string machine() {
  std::string model = field_of("/proc/cpuinfo", "model name");
  return (model.empty() ? "unknown CPU" : model) + ", " + std::to_string(std::thread::hardware_concurrency()) +
         " online cores";
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  std::string root = TGC_BENCH_SOURCE_DIR;
  if (o.work.empty()) o.work = std::string(TGC_BENCH_BINARY_DIR) + "/bench";
  if (o.tgc.empty()) o.tgc = TGC_BENCH_TGC;
  if (o.ceilings.empty()) o.ceilings = TGC_BENCH_CEILINGS;
  if (o.ort.empty()) o.ort = root + "/tools/ort/ort_run.js";
  for (const auto& [what, path] : {std::pair{"tgc", o.tgc}, {"bench-ceilings", o.ceilings}, {"ort_run.js", o.ort}})
    if (!fs::exists(path)) die(std::string(what) + " not found at " + path);
  if (!ort_is_python(o) && !fs::is_directory(fs::path(o.ort).parent_path() / "node_modules/onnxruntime-node"))
    die("onnxruntime-node is not installed: cd " + fs::path(o.ort).parent_path().string() +
        " && ONNXRUNTIME_NODE_INSTALL=skip npm ci");
  fs::create_directories(o.work);

  RunInfo info;
  {
    const char* via = std::getenv("TGC_BENCH_VIA");  // set by tools/scripts/bench.sh
    std::vector<std::string> args(argv + 1, argv + argc);
    std::string self = via ? via : fs::relative(fs::absolute(argv[0]), root).string();
    info.command = shell_join({self}) + (args.empty() ? "" : " " + shell_join(args));
  }
  std::vector<Case> cases;
  try {
    cases = collect_cases(o, root);
  } catch (const Error& e) {
    die(e.what());
  }
  if (cases.empty()) die("no case matches --filter '" + o.filter + "'");
  info.load_before = load_average();
  {
    time_t now = time(nullptr);
    char b[64];
    strftime(b, sizeof b, "%Y-%m-%d %H:%M %Z", localtime(&now));
    info.date = b;
    ProcessResult head = run_process({"git", "-C", root, "rev-parse", "--short=12", "HEAD"}, o.work, 30);
    ProcessResult dirty = run_process({"git", "-C", root, "status", "--porcelain", "--untracked-files=no"}, o.work, 30);
    info.commit = head.exit_code == 0 ? trim(head.out) : "unknown";
    if (dirty.exit_code == 0 && !trim(dirty.out).empty()) info.commit += " (with uncommitted changes)";
    info.machine = machine();
    if (ort_is_python(o)) {
      ProcessResult v =
          run_process({"python3", "-c", "import onnxruntime; print(onnxruntime.__version__)"}, o.work, 60);
      info.ort_version = "onnxruntime " + (v.exit_code == 0 ? trim(v.out) : "?") + " (Python)";
    } else {
      std::ifstream pkg(fs::path(o.ort).parent_path() / "node_modules/onnxruntime-node/package.json");
      std::string text((std::istreambuf_iterator<char>(pkg)), {});
      size_t v = text.find("\"version\": \"");
      info.ort_version =
          "onnxruntime-node " + (v == std::string::npos ? "?" : text.substr(v + 12, text.find('"', v + 12) - v - 12));
    }
    std::ostringstream tol;
    tol << "max |tgc - onnxruntime| <= " << o.tol << " x max |onnxruntime| per output (err column: the worst ratio)";
    info.tolerance = tol.str();
  }

  std::vector<Ceiling> ceilings;
  for (int t : o.zoo ? std::vector<int>{} : o.threads) {
    auto c = measure_ceilings(cases, t, o, info.openblas);
    ceilings.insert(ceilings.end(), c.begin(), c.end());
  }
  std::map<std::string, Prepared> prepared;
  std::vector<Row> rows;
  bool failed = false;
  // A case at every thread count before the next case: its rows at 1 and 2 threads are measured
  // minutes apart at most, so the speed-up column compares like with like on a noisy machine.
  for (size_t i = 0; i < cases.size(); ++i) {
    for (int t : o.threads) {
      const Case& c = cases[i];
      progress("[" + std::to_string(i + 1) + "/" + std::to_string(cases.size()) + ", " + std::to_string(t) + "T] " +
               c.name + ": ");
      if (!prepared.count(c.name)) prepared[c.name] = prepare(c, o);
      Row row = bench_case(c, prepared[c.name], t, o);
      attach_ceiling(row, c, ceilings);
      std::string beam =
          row.beam && row.ort ? ", beam/ort " + std::to_string(row.beam->median_ms / row.ort->median_ms) : "";
      progress(row.tgc && row.ort ? "tgc/ort " + std::to_string(row.tgc->median_ms / row.ort->median_ms) + beam + "\n"
                                  : (row.failure.empty() ? "done" : row.failure) + "\n");
      failed = failed || row.tgc_failed;
      rows.push_back(row);
    }
  }
  info.load_after = load_average();

  std::cout << "tgc-bench: " << info.command << "\n"
            << info.date << ", commit " << info.commit << ", " << info.machine << ", load " << info.load_before
            << " -> " << info.load_after << "\n";
  for (const auto& c : ceilings)
    std::cout << "ceiling " << c.name << " @" << c.threads << "T: " << c.value << " " << c.unit << "\n";
  std::cout << "\n" << text_table(rows);
  std::cout << "\ntgc/ort: tgc's median latency over onnxruntime's (below 1: tgc is faster). Rates: GFLOP/s for "
               "FLOP-bound cases (against sgemm), GB/s of inputs+outputs for bandwidth-bound ones (against memcpy).\n";
  if (!o.markdown.empty()) {
    try {
      if (o.zoo)
        write_markdown(o.markdown, zoo_markdown(info, rows), "zoo");
      else
        write_markdown(o.markdown, markdown(info, ceilings, rows), "results");
    } catch (const Error& e) {
      die(e.what());
    }
    std::cout << "wrote " << o.markdown << "\n";
  }
  return failed ? 1 : 0;
}
