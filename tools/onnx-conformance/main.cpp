// Runs ONNX backend test cases (Debian's libonnx-testdata: model.onnx + test_data_set_*/
// {input,output}_N.pb) on one target and compares with the expected outputs, with ONNX's
// tolerances; merges the saved runs of several targets into a markdown report.
//
//   onnx-conformance [DATA...] [--target interp|TARGET] [--triple T] [--emulator CMD]
//                    [--exclude FILE | --no-exclude] [--list FILE] [--every N] [--update FILE]
//                    [--results FILE] [--label NAME] [-j N] [--timeout S] [-v]
//   onnx-conformance report OUT.md RESULTS.tsv... [--generated-by CMD] [--revision TEXT]
//
// DATA: data dirs (.../data/node) or their root (default /usr/share/libonnx-testdata/data);
// cases are named "node/test_abs". --target interp (default) runs the reference interpreter;
// cpu/qcom compile each case with tgc and run the artifact (under --emulator, e.g.
// "qemu-aarch64 -L /usr/aarch64-linux-gnu"). Each case runs in its own process (-j at once).
// --exclude: cases matching the file's patterns are reported as excluded, with the reason, and
//   not run (default: tests/conformance/onnx_conformance_excluded.txt of this source tree).
// --list FILE: runs only the cases named in FILE and exits 1 if any of them does not pass.
// --every N: of the selected cases, runs only every Nth (a fixed sample for slow targets).
// --update FILE: writes the names of the passing cases to FILE.
// --results FILE: saves every case's outcome for `onnx-conformance report`.
#include <unistd.h>

#include <array>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "ir/error.h"
#include "target/targets.h"
#include "tools/onnx-conformance/isolate.h"
#include "tools/onnx-conformance/report.h"
#include "tools/onnx-conformance/results.h"

namespace fs = std::filesystem;
using namespace conformance;

namespace {
const char* kDefaultData = "/usr/share/libonnx-testdata/data";
const char* kUsage =
    "usage: onnx-conformance [DATA...] [--target interp|TARGET] [--triple T] [--emulator CMD]\n"
    "         [--exclude FILE | --no-exclude] [--list FILE] [--every N] [--update FILE]\n"
    "         [--results FILE] [--label NAME] [-j N] [--timeout S] [-v]\n"
    "       onnx-conformance report OUT.md RESULTS.tsv... [--generated-by CMD] [--revision TEXT]\n";

// `s` as one shell word, so that a recorded command line can be pasted back.
std::string shell_quoted(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-+=/.,:@%") ==
                        std::string::npos)
    return s;
  std::string r = "'";
  for (char ch : s) r += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return r + "'";
}

struct Args {
  std::vector<fs::path> data;
  Target target;
  std::string exclude = std::string(TGC_SOURCE_DIR) + "/tests/conformance/onnx_conformance_excluded.txt";
  std::string list, update, results, label, command;
  int every = 1, jobs = 1, timeout_s = 600;
  bool verbose = false;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 0; i < argc; ++i) a.command += (i ? " " : "") + shell_quoted(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw tgc::Error(s + " needs a value");
      return argv[++i];
    };
    if (s == "--target")
      a.target.name = value();
    else if (s == "--triple")
      a.target.triple = value();
    else if (s == "--emulator")
      a.target.emulator = value();
    else if (s == "--exclude")
      a.exclude = value();
    else if (s == "--no-exclude")
      a.exclude.clear();
    else if (s == "--list")
      a.list = value();
    else if (s == "--every")
      a.every = std::stoi(value());
    else if (s == "--update")
      a.update = value();
    else if (s == "--results")
      a.results = value();
    else if (s == "--label")
      a.label = value();
    else if (s == "-j")
      a.jobs = std::stoi(value());
    else if (s == "--timeout")
      a.timeout_s = std::stoi(value());
    else if (s == "-v")
      a.verbose = true;
    else if (s.starts_with("-"))
      throw tgc::Error("unknown option '" + s + "'");
    else
      a.data.push_back(s);
  }
  // "interp" runs the reference interpreter; every other name is a row of the target table.
  if (a.target.name != "interp") tgc::find_target(a.target.name);
  if (a.every < 1 || a.jobs < 1 || a.timeout_s < 1) throw tgc::Error("--every, -j and --timeout take positive numbers");
  if (a.data.empty()) a.data.push_back(kDefaultData);
  if (a.label.empty()) a.label = a.target.name + (a.target.triple.empty() ? "" : " " + a.target.triple);
  a.target.runtime_dir = (fs::canonical("/proc/self/exe").parent_path() / "runtime").string();
  return a;
}

// The cases to run: all found, or those of --list (each must exist), then every Nth.
std::vector<Case> select_cases(const Args& a) {
  std::vector<Case> all = discover_cases(a.data);
  std::vector<Case> chosen;
  if (a.list.empty()) {
    chosen = all;
  } else {
    // A listed name is "dir/case", or a bare case name found in exactly one of the data dirs.
    std::map<std::string, std::vector<const Case*>> by_name;
    for (const Case& c : all) {
      by_name[c.name].push_back(&c);
      by_name[c.name.substr(c.name.find('/') + 1)].push_back(&c);
    }
    for (const std::string& n : read_case_list(a.list)) {
      auto it = by_name.find(n);
      if (it == by_name.end()) throw tgc::Error(a.list + ": case '" + n + "' is not under the data dirs given");
      if (it->second.size() > 1)
        throw tgc::Error(a.list + ": case '" + n + "' is in several data dirs; name it DIR/" + n);
      chosen.push_back(*it->second[0]);
    }
  }
  std::vector<Case> sample;
  for (size_t i = 0; i < chosen.size(); i += size_t(a.every)) sample.push_back(chosen[i]);
  return sample;
}

std::string describe_selection(const Args& a, size_t n) {
  std::string dirs;
  for (const auto& d : a.data) dirs += (dirs.empty() ? "" : " ") + d.string();
  std::string s = a.list.empty() ? "all cases under " + dirs : "the cases of " + fs::path(a.list).filename().string();
  if (a.every > 1) s += ", one case in " + std::to_string(a.every);
  return s + " (" + std::to_string(n) + " cases)";
}

std::string dir_of(const std::string& case_name) { return case_name.substr(0, case_name.find('/')); }

int run(const Args& a) {
  std::vector<Case> cases = select_cases(a);
  std::vector<Exclusion> exclusions = a.exclude.empty() ? std::vector<Exclusion>{} : read_exclusions(a.exclude);
  RunResults res;
  res.label = a.label;
  res.target = a.target.name + (a.target.triple.empty() ? "" : " " + a.target.triple) +
               (a.target.emulator.empty() ? "" : " under " + a.target.emulator);
  res.selection = describe_selection(a, cases.size());
  res.command = a.command;
  res.jobs = a.jobs;
  res.cases.resize(cases.size());
  std::vector<size_t> to_run;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Exclusion* e = find_exclusion(exclusions, cases[i].name);
    res.cases[i] = {cases[i].name, cases[i].op, e ? Status::Excluded : Status::Fail, e ? e->reason : "not run"};
    if (!e) to_run.push_back(i);
  }
  bool listed = !a.list.empty();
  auto print = [&](const CaseResult& r) {
    bool show = a.verbose || r.status == Status::Fail || (listed && r.status != Status::Pass);
    if (!show) return;
    std::string tag = status_name(r.status);
    for (char& ch : tag) ch = char(std::toupper(ch));
    std::cout << tag << " " << r.name << (r.detail.empty() ? "" : ": " + r.detail) << std::endl;
  };
  for (const CaseResult& r : res.cases)
    if (r.status == Status::Excluded) print(r);
  auto t0 = std::chrono::steady_clock::now();
  run_isolated(
      to_run.size(), a.jobs, a.timeout_s, [&](size_t k) { return run_case(a.target, cases[to_run[k]]); },
      [&](size_t k, const Outcome& o) {
        CaseResult& r = res.cases[to_run[k]];
        r.status = o.status, r.detail = o.detail;
        print(r);
      });
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::map<std::string, std::array<int, 4>> per_dir;
  std::array<int, 4> total{};
  for (const CaseResult& r : res.cases) per_dir[dir_of(r.name)][size_t(r.status)]++, total[size_t(r.status)]++;
  auto line = [](const std::array<int, 4>& n) {
    return "passed " + std::to_string(n[0]) + ", failed " + std::to_string(n[1]) + ", unsupported " +
           std::to_string(n[2]) + ", excluded " + std::to_string(n[3]) + " of " +
           std::to_string(n[0] + n[1] + n[2] + n[3]);
  };
  if (per_dir.size() > 1)
    for (const auto& [dir, n] : per_dir) std::cout << dir << ": " << line(n) << "\n";
  std::cout << line(total) << " (" << a.label << ", " << res.seconds << " s)\n";

  if (!a.results.empty()) write_results(a.results, res);
  if (!a.update.empty()) {
    std::ofstream f(a.update);
    f << "# ONNX backend test cases that pass on " << res.target
      << "; regenerate with tools/scripts/conformance-report.sh\n";
    for (const CaseResult& r : res.cases)
      if (r.status == Status::Pass) f << r.name << "\n";
    if (!f) throw tgc::Error(a.update + ": write failed");
  }
  return listed && total[0] != int(cases.size()) ? 1 : 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    // --help or -h anywhere (also after other options or `report`) prints the usage.
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
        std::cout << kUsage;
        return 0;
      }
    if (argc >= 2 && std::string(argv[1]) == "report") return report_main(argc - 1, argv + 1);
    return run(parse_args(argc, argv));
  } catch (const std::exception& e) {
    std::cerr << "onnx-conformance: error: " << e.what() << "\n";
    return 2;
  }
}
