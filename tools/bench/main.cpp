// tgc-bench: tgc's compiled artifacts against onnxruntime (onnxruntime-node, CPU), side by side
// in one process tree on the same inputs and thread count, on every model of the model
// directories and on generated microbenchmarks; prints median latencies, the tgc/onnxruntime
// ratio and GFLOP/s or GB/s against the machine's ceilings measured in the same run (OpenBLAS
// sgemm, memcpy). Outputs of both sides are compared, so a fast wrong result is flagged.
// Usage: tgc-bench --help. tools/scripts/bench.sh builds what it needs and runs it.
#include <ctime>
#include <filesystem>
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
};

const char* kUsage =
    "usage: tgc-bench [options]\n"
    "  --threads LIST     thread counts, e.g. 1, 1,2 or all (one per online core); default 1\n"
    "  --iters N          timed runs per side and round (default: as many as fit in --budget, 3 to 1000)\n"
    "  --budget SECONDS   time per side and round when --iters is not given (default 1)\n"
    "  --rounds R         alternate tgc and onnxruntime R times and keep each side's best median\n"
    "                     (default 2; 1 where three runs already exceed the budget)\n"
    "  --filter REGEX     only the cases whose name matches (ECMAScript regex, searched)\n"
    "  --models-only      only the models; --micro-only: only the microbenchmarks\n"
    "  --models-dir DIR   a model directory (repeatable; default: models/ and ../shared/models/real/)\n"
    "  --markdown FILE    write the results section of FILE (docs/performance.md) with the command line\n"
    "  --tol T            outputs agree when max|tgc - ort| <= T * max|ort| per output (default 1e-3)\n"
    "  --timeout SECONDS  limit for each command it runs (default 600)\n"
    "  --work DIR         scratch directory (default: <build>/bench)\n"
    "  --tgc PATH, --ort PATH (ort_run.js), --ceilings PATH (bench-ceilings): override the defaults\n"
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
    } else if (a == "--filter") {
      o.filter = value();
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

// What is done once per case, whatever the thread count: inputs, the artifact, the FLOP count.
struct Prepared {
  std::string dir, artifact;
  InputArgs inputs;
  std::string compile_error;
  double compile_s = 0;
  std::optional<double> flops;
};

void progress(const std::string& msg) { std::cerr << msg << std::flush; }

Prepared prepare(const Case& c, const Options& o) {
  Prepared p;
  p.dir = o.work + "/cases/" + c.name;
  fs::create_directories(p.dir);
  if (!c.error.empty()) {
    p.compile_error = c.error;
    return p;
  }
  p.inputs = write_inputs(c, p.dir + "/inputs");
  p.artifact = p.dir + "/" + c.name;
  std::vector<std::string> cmd = {o.tgc, "compile", c.model, "--target=cpu", "-o", p.artifact};
  for (const auto& s : c.input_shape_args()) cmd.push_back(s);
  progress("compile ");
  ProcessResult r = run_process(cmd, p.dir, o.timeout_s);
  if (r.exit_code != 0) {
    std::string line = r.first_error_line();
    if (line.rfind("tgc: error: ", 0) == 0) line = line.substr(12);
    if (line.rfind(c.model + ": ", 0) == 0) line = line.substr(c.model.size() + 2);
    p.compile_error = "compile failed: " + line;
  }
  p.compile_s = r.wall_s;
  p.flops = count_flops(c);
  return p;
}

std::optional<Timing> timing_of(const ProcessResult& r) {
  auto med = json_number(r.out, "median_ms"), mn = json_number(r.out, "min_ms");
  if (r.exit_code != 0 || !med || !mn) return std::nullopt;
  return Timing{*med, *mn};
}

// Runs one case at one thread count: a checking run of each side (outputs compared), then
// `rounds` alternating timed runs of each side.
Row bench_case(const Case& c, const Prepared& p, int threads, const Options& o) {
  Row row;
  row.name = c.name;
  row.inputs = c.shape_summary();
  row.micro = c.micro;
  row.threads = threads;
  row.metric = c.metric;
  row.flops = p.flops;
  row.compile_s = p.compile_s;
  std::string t = std::to_string(threads);
  std::string tgc_out = p.dir + "/tgc_out_t" + t, ort_out = p.dir + "/ort_out_t" + t;
  fs::remove_all(tgc_out);
  fs::remove_all(ort_out);

  std::vector<std::string> ort_cmd = {"node", o.ort, c.model};
  for (const auto& a : p.inputs.ort) ort_cmd.push_back(a);
  ort_cmd.insert(ort_cmd.end(), {"--threads", t});
  std::vector<std::string> tgc_cmd = {p.artifact};
  for (const auto& a : p.inputs.tgc) tgc_cmd.push_back(a);
  tgc_cmd.insert(tgc_cmd.end(), {"--threads", t});
  auto with = [](std::vector<std::string> cmd, std::initializer_list<std::string> extra) {
    cmd.insert(cmd.end(), extra);
    return cmd;
  };

  // Checking runs; they also estimate each side's time per inference, which sets the number
  // of timed runs (tgc's from the wall time of one whole run, an upper bound, unless short).
  double est_tgc = 0, est_ort = 0;
  bool tgc_ok = p.compile_error.empty() && !p.artifact.empty(), ort_ok = c.error.empty();
  if (tgc_ok) {
    progress("check-tgc ");
    ProcessResult r = run_process(with(tgc_cmd, {"-o", tgc_out}), p.dir, o.timeout_s);
    if (r.exit_code != 0) {
      row.failure = "tgc run failed: " + r.first_error_line();
      row.tgc_failed = true;
      tgc_ok = false;
    }
    est_tgc = r.wall_s * 1e3;
    // A whole run that cheap is mostly process start: calibrate with a short bench instead.
    if (tgc_ok && est_tgc * 20 < o.budget_s * 1e3) {
      if (auto tm = timing_of(run_process(with(tgc_cmd, {"--bench", "3"}), p.dir, o.timeout_s))) est_tgc = tm->median_ms;
    }
  } else {
    row.failure = p.compile_error;
  }
  if (ort_ok) {
    progress("check-ort ");
    ProcessResult r = run_process(with(ort_cmd, {"-o", ort_out, "--bench", "1"}), p.dir, o.timeout_s);
    auto tm = timing_of(r);
    if (!tm) {
      if (row.failure.empty()) row.failure = "onnxruntime failed: " + r.first_error_line();
      ort_ok = false;
    } else {
      est_ort = tm->median_ms;
    }
  }
  if (tgc_ok && ort_ok) {
    row.agreement = compare_outputs(tgc_out, ort_out, o.tol);
    if (!row.agreement->ok) row.tgc_failed = true;
  }
  if (tgc_ok) row.bytes = io_bytes(c, tgc_out);
  else if (ort_ok) row.bytes = io_bytes(c, ort_out);
  if (!tgc_ok && !ort_ok) return row;

  double slowest = std::max(tgc_ok ? est_tgc : 0.0, ort_ok ? est_ort : 0.0);
  double budget_ms = o.budget_s * 1e3;
  row.iters = o.iters ? o.iters : int(std::clamp(budget_ms / std::max(slowest, 1e-3), 3.0, 1000.0));
  row.rounds = slowest * 3 > budget_ms && !o.iters ? 1 : o.rounds;
  // An artifact too slow for --bench (3 warm-up runs first) within --timeout is timed by its
  // checking run alone.
  if (tgc_ok && est_tgc * (3 + row.iters) > 0.8 * o.timeout_s * 1e3) {
    row.tgc = Timing{est_tgc, est_tgc};
    row.tgc_single_run = true;
    tgc_ok = false;
  }
  std::string n = std::to_string(row.iters);
  for (int round = 0; round < row.rounds; ++round) {
    for (int side = 0; side < 2; ++side) {
      bool is_tgc = side == 0;
      if (!(is_tgc ? tgc_ok : ort_ok)) continue;
      progress(std::string(is_tgc ? "tgc" : "ort") + "x" + n + " ");
      ProcessResult r = run_process(with(is_tgc ? tgc_cmd : ort_cmd, {"--bench", n}), p.dir, o.timeout_s);
      std::optional<Timing> tm = timing_of(r);
      std::optional<Timing>& best = is_tgc ? row.tgc : row.ort;
      if (!tm) {
        if (row.failure.empty()) row.failure = std::string(is_tgc ? "tgc" : "onnxruntime") + " bench failed: " + r.first_error_line();
        if (is_tgc) row.tgc_failed = true;
        (is_tgc ? tgc_ok : ort_ok) = false;
        best.reset();
        continue;
      }
      if (!best || tm->median_ms < best->median_ms) best = tm;
    }
  }
  return row;
}

std::vector<Case> collect_cases(const Options& o, const std::string& root) {
  std::vector<Case> cases;
  InputTable table = read_input_table(root + "/tools/bench/inputs.txt");
  std::regex filter(o.filter.empty() ? "." : o.filter, std::regex::ECMAScript);
  auto wanted = [&](const std::string& name) { return std::regex_search(name, filter); };
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
      }
    }
  }
  if (o.micro) {
    std::string dir = o.work + "/micro";
    ProcessResult r = run_process({"/usr/bin/python3", root + "/tools/bench/micro_models.py", dir}, o.work, o.timeout_s);
    if (r.exit_code != 0) die("micro_models.py failed: " + r.first_error_line());
    std::ifstream index(dir + "/index.txt");
    for (std::string file; std::getline(index, file);)
      if (!file.empty() && wanted(fs::path(file).stem().string())) cases.push_back(load_case(dir + "/" + file, {}, true));
  }
  return cases;
}

// When a case is FLOP-bound: sgemm at 256, 512, 1024, 2048 and every other matmul size in use
// (the best of them is the ceiling of FLOP-bound cases other than matmuls); when a case is
// bandwidth-bound: memcpy of 256 MiB.
std::vector<Ceiling> measure_ceilings(const std::vector<Case>& cases, int threads, const Options& o, std::string& openblas) {
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
  std::vector<std::string> cmd = {o.ceilings, "--threads", std::to_string(threads), "--budget", std::to_string(o.budget_s)};
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
      openblas = line.substr(a, line.find('"', a) - a) + " (core " + line.substr(core, line.find('"', core) - core) + ")";
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
  if (!fs::is_directory(fs::path(o.ort).parent_path() / "node_modules/onnxruntime-node"))
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
    std::ifstream pkg(fs::path(o.ort).parent_path() / "node_modules/onnxruntime-node/package.json");
    std::string text((std::istreambuf_iterator<char>(pkg)), {});
    size_t v = text.find("\"version\": \"");
    info.ort_version = v == std::string::npos ? "?" : text.substr(v + 12, text.find('"', v + 12) - v - 12);
    std::ostringstream tol;
    tol << "max |tgc - onnxruntime| <= " << o.tol << " x max |onnxruntime| per output (err column: the worst ratio)";
    info.tolerance = tol.str();
  }

  std::vector<Ceiling> ceilings;
  for (int t : o.threads) {
    auto c = measure_ceilings(cases, t, o, info.openblas);
    ceilings.insert(ceilings.end(), c.begin(), c.end());
  }
  std::map<std::string, Prepared> prepared;
  std::vector<Row> rows;
  bool failed = false;
  for (int t : o.threads) {
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      progress("[" + std::to_string(i + 1) + "/" + std::to_string(cases.size()) + ", " + std::to_string(t) + "T] " + c.name + ": ");
      if (!prepared.count(c.name)) prepared[c.name] = prepare(c, o);
      Row row = bench_case(c, prepared[c.name], t, o);
      attach_ceiling(row, c, ceilings);
      progress(row.tgc && row.ort ? "tgc/ort " + std::to_string(row.tgc->median_ms / row.ort->median_ms) + "\n"
                                  : (row.failure.empty() ? "done" : row.failure) + "\n");
      failed = failed || row.tgc_failed;
      rows.push_back(row);
    }
  }
  info.load_after = load_average();

  std::cout << "tgc-bench: " << info.command << "\n" << info.date << ", commit " << info.commit << ", " << info.machine
            << ", load " << info.load_before << " -> " << info.load_after << "\n";
  for (const auto& c : ceilings)
    std::cout << "ceiling " << c.name << " @" << c.threads << "T: " << c.value << " " << c.unit << "\n";
  std::cout << "\n" << text_table(rows);
  std::cout << "\ntgc/ort: tgc's median latency over onnxruntime's (below 1: tgc is faster). Rates: GFLOP/s for "
               "FLOP-bound cases (against sgemm), GB/s of inputs+outputs for bandwidth-bound ones (against memcpy).\n";
  if (!o.markdown.empty()) {
    try {
      write_markdown(o.markdown, markdown(info, ceilings, rows));
    } catch (const Error& e) {
      die(e.what());
    }
    std::cout << "wrote " << o.markdown << "\n";
  }
  return failed ? 1 : 0;
}
