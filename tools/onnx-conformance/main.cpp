// Runs ONNX backend test cases (model.onnx + test_data_set_*/{input,output}_N.pb) through the
// reference interpreter and compares with the expected outputs, with ONNX's tolerances.
//
//   onnx-conformance DATA_DIR [--target interp|cpu|qcom] [--triple T] [--emulator CMD]
//                    [--list FILE] [--update FILE] [-v]
// --target interp (default) runs the reference interpreter; cpu/qcom compile each case with
// tgc and run the artifact (under --emulator, e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu").
// Without --list, runs every case under DATA_DIR and prints pass/fail/unsupported per case.
// --list FILE: runs only the cases named in FILE and fails (exit 1) if any of them fails.
// --update FILE: writes the names of all passing cases to FILE.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <unistd.h>

#include "codegen/emit.h"
#include "frontend/npy.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/error.h"
#include "ir/interpret.h"

namespace fs = std::filesystem;
using namespace tgc;

namespace {
enum class Result { Pass, Fail, Unsupported };

struct Config {
  std::string target = "interp", triple, emulator, runtime_dir;
};

// Compiles the case, runs the artifact on the inputs, reads back its outputs.
std::vector<HostTensor> run_compiled(const Config& cfg, Model& m, const std::vector<HostTensor>& ins) {
  fs::path work = fs::temp_directory_path() / ("tgc-conf-" + std::to_string(getpid()));
  fs::remove_all(work);
  fs::create_directories(work / "out");
  CompileOptions opt;
  opt.target = cfg.target;
  opt.triple = cfg.triple;
  opt.output = (work / "model").string();
  opt.runtime_dir = cfg.runtime_dir;
  std::vector<std::string> out_names;
  for (const auto& o : m.outputs) out_names.push_back(o.name);
  compile_model(m, opt);
  std::string cmd = cfg.emulator.empty() ? "" : cfg.emulator + " ";
  cmd += "'" + opt.output + "'";
  for (size_t i = 0; i < ins.size(); ++i) {
    std::string f = (work / ("in" + std::to_string(i) + ".npy")).string();
    write_npy(f, ins[i]);
    cmd += " -i '" + file_safe(m.inputs[i].name) + "=" + f + "'";
  }
  cmd += " -o '" + (work / "out").string() + "' > '" + (work / "log").string() + "' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(work / "log");
    std::string line;
    std::getline(log, line);
    throw Error("artifact failed: " + line);
  }
  std::vector<HostTensor> outs;
  for (const auto& n : out_names) outs.push_back(read_npy((work / "out" / (file_safe(n) + ".npy")).string()));
  fs::remove_all(work);
  return outs;
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> r;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) return r;
    r.push_back(p);
  }
}

bool close(const HostTensor& got, const HostTensor& want, std::string& why) {
  if (got.shape != want.shape) {
    why = "shape " + shape_str(got.shape) + " != expected " + shape_str(want.shape);
    return false;
  }
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.get(i), w = want.get(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= 1e-7 + 1e-3 * std::fabs(w))) {
      why = "element " + std::to_string(i) + ": got " + std::to_string(g) + ", expected " + std::to_string(w);
      return false;
    }
  }
  return true;
}

Result run_case(const Config& cfg, const fs::path& dir, std::string& why) {
  fs::path set = dir / "test_data_set_0";
  std::vector<HostTensor> ins, outs;
  for (const auto& p : numbered(set, "input_")) ins.push_back(read_onnx_tensor(p.string()));
  for (const auto& p : numbered(set, "output_")) outs.push_back(read_onnx_tensor(p.string()));
  ImportOptions opt;
  Model m;
  try {
    m = import_onnx((dir / "model.onnx").string(), opt);
  } catch (const Error& e) {
    why = e.what();
    return Result::Unsupported;
  }
  if (m.inputs.size() != ins.size()) {
    why = "model has " + std::to_string(m.inputs.size()) + " inputs, data set " + std::to_string(ins.size());
    return Result::Fail;
  }
  std::map<int64_t, HostTensor> feeds;
  for (size_t i = 0; i < ins.size(); ++i) feeds[m.inputs[i].tensor.uop()->ival()] = ins[i];
  std::vector<const UOp*> roots;
  for (const auto& o : m.outputs) roots.push_back(o.tensor.uop());
  std::vector<HostTensor> got;
  try {
    got = cfg.target == "interp" ? interpret(*m.graph, roots, feeds) : run_compiled(cfg, m, ins);
  } catch (const Error& e) {
    why = e.what();
    return Result::Fail;
  }
  for (size_t i = 0; i < outs.size() && i < got.size(); ++i)
    if (!close(got[i], outs[i], why)) {
      why = "output " + std::to_string(i) + ": " + why;
      return Result::Fail;
    }
  return Result::Pass;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: onnx-conformance DATA_DIR [--list FILE] [--update FILE] [-v]\n";
    return 2;
  }
  fs::path data = argv[1];
  Config cfg;
  cfg.runtime_dir = (fs::canonical("/proc/self/exe").parent_path() / "runtime").string();
  std::string list, update;
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--list" && i + 1 < argc) list = argv[++i];
    else if (a == "--update" && i + 1 < argc) update = argv[++i];
    else if (a == "-v") verbose = true;
    else if (a == "--target" && i + 1 < argc) cfg.target = argv[++i];
    else if (a == "--triple" && i + 1 < argc) cfg.triple = argv[++i];
    else if (a == "--emulator" && i + 1 < argc) cfg.emulator = argv[++i];
  }
  std::vector<std::string> cases;
  if (!list.empty()) {
    std::ifstream f(list);
    for (std::string line; std::getline(f, line);)
      if (!line.empty() && line[0] != '#') cases.push_back(line);
  } else {
    for (const auto& e : fs::directory_iterator(data))
      if (fs::exists(e.path() / "model.onnx")) cases.push_back(e.path().filename().string());
    std::sort(cases.begin(), cases.end());
  }
  int counts[3] = {};
  std::vector<std::string> passed;
  for (const std::string& c : cases) {
    std::string why;
    Result r;
    try {
      r = run_case(cfg, data / c, why);
    } catch (const std::exception& e) {
      r = Result::Fail, why = e.what();
    }
    counts[int(r)]++;
    if (r == Result::Pass) passed.push_back(c);
    const char* tag[] = {"PASS", "FAIL", "UNSUPPORTED"};
    if (verbose || r == Result::Fail || (!list.empty() && r != Result::Pass))
      std::cout << tag[int(r)] << " " << c << (why.empty() ? "" : ": " + why) << "\n";
  }
  std::cout << "passed " << counts[0] << ", failed " << counts[1] << ", unsupported " << counts[2] << " of " << cases.size() << "\n";
  if (!update.empty()) {
    std::ofstream f(update);
    f << "# ONNX node test cases the reference interpreter passes; regenerate with onnx-conformance --update\n";
    for (const auto& c : passed) f << c << "\n";
  }
  return (!list.empty() && counts[0] != int(cases.size())) ? 1 : 0;
}
