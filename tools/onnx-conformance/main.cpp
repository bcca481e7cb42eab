// Runs ONNX backend test cases (model.onnx + test_data_set_*/{input,output}_N.pb) through the
// reference interpreter and compares with the expected outputs, with ONNX's tolerances.
//
//   onnx-conformance DATA_DIR [--list FILE] [--update FILE] [-v]
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

#include "frontend/onnx/onnx_import.h"
#include "ir/error.h"
#include "ir/interpret.h"

namespace fs = std::filesystem;
using namespace tgc;

namespace {
enum class Result { Pass, Fail, Unsupported };

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

Result run_case(const fs::path& dir, std::string& why) {
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
    got = interpret(*m.graph, roots, feeds);
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
  std::string list, update;
  bool verbose = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--list" && i + 1 < argc) list = argv[++i];
    else if (a == "--update" && i + 1 < argc) update = argv[++i];
    else if (a == "-v") verbose = true;
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
      r = run_case(data / c, why);
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
