#include "tools/onnx-conformance/cases.h"

#include <fnmatch.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

#include "ir/error.h"
#include "onnx/onnx.pb.h"

namespace fs = std::filesystem;

namespace conformance {

namespace {
bool is_case_dir(const fs::path& p) { return fs::is_regular_file(p / "model.onnx"); }

bool holds_cases(const fs::path& p) {
  for (const auto& e : fs::directory_iterator(p))
    if (e.is_directory() && is_case_dir(e.path())) return true;
  return false;
}

onnx::ModelProto load_model(const fs::path& case_dir) {
  std::ifstream f(case_dir / "model.onnx", std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  onnx::ModelProto m;
  if (!m.ParseFromString(bytes)) throw tgc::Error((case_dir / "model.onnx").string() + ": not a valid ONNX model");
  return m;
}

std::vector<std::string> graph_inputs(const onnx::ModelProto& m) {
  std::set<std::string> inits;
  for (const auto& t : m.graph().initializer()) inits.insert(t.name());
  std::vector<std::string> r;
  for (const auto& in : m.graph().input())
    if (!inits.count(in.name())) r.push_back(in.name());
  return r;
}

std::string first_op_type(const onnx::ModelProto& m) {
  for (const auto& n : m.graph().node())
    if (n.op_type() != "Constant") return n.op_type();
  return m.graph().node_size() ? "Constant" : "(no nodes)";
}

void add_cases(const fs::path& data_dir, std::vector<Case>& out) {
  std::string prefix = data_dir.filename().string();
  for (const auto& e : fs::directory_iterator(data_dir)) {
    if (!e.is_directory() || !is_case_dir(e.path())) continue;
    Case c;
    c.name = prefix + "/" + e.path().filename().string();
    c.dir = e.path();
    c.inputs = graph_inputs(load_model(c.dir));
    c.op = main_op_type(c.dir);
    out.push_back(std::move(c));
  }
}
}  // namespace

std::string main_op_type(const fs::path& case_dir) {
  const std::string suffix = "_expanded";
  std::string name = case_dir.filename().string();
  if (name.size() > suffix.size() && name.ends_with(suffix)) {
    fs::path twin = case_dir.parent_path() / name.substr(0, name.size() - suffix.size());
    if (is_case_dir(twin)) return first_op_type(load_model(twin));
  }
  return first_op_type(load_model(case_dir));
}

std::vector<Case> discover_cases(const std::vector<fs::path>& data) {
  std::vector<Case> cases;
  for (fs::path p : data) {
    p = p.lexically_normal();
    if (!p.has_filename()) p = p.parent_path();  // "data/node/" is named "node"
    if (!fs::is_directory(p)) throw tgc::Error(p.string() + ": not a directory");
    if (holds_cases(p)) {
      add_cases(p, cases);
      continue;
    }
    std::vector<fs::path> subdirs;
    for (const auto& e : fs::directory_iterator(p))
      if (e.is_directory() && holds_cases(e.path())) subdirs.push_back(e.path());
    if (subdirs.empty()) throw tgc::Error(p.string() + ": holds no test cases (no */model.onnx or */*/model.onnx)");
    for (const auto& s : subdirs) add_cases(s, cases);
  }
  std::sort(cases.begin(), cases.end(), [](const Case& a, const Case& b) { return a.name < b.name; });
  for (size_t i = 1; i < cases.size(); ++i)
    if (cases[i].name == cases[i - 1].name)
      throw tgc::Error("two data dirs give the case name '" + cases[i].name + "': " + cases[i - 1].dir.string() +
                       " and " + cases[i].dir.string());
  return cases;
}

std::vector<Exclusion> read_exclusions(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw tgc::Error(path + ": cannot open");
  std::vector<Exclusion> r;
  int n = 0;
  for (std::string line; std::getline(f, line);) {
    ++n;
    std::istringstream ss(line);
    Exclusion e;
    if (!(ss >> e.pattern) || e.pattern[0] == '#') continue;
    std::getline(ss >> std::ws, e.reason);
    if (e.reason.empty())
      throw tgc::Error(path + ":" + std::to_string(n) + ": pattern '" + e.pattern + "' has no reason");
    r.push_back(std::move(e));
  }
  return r;
}

const Exclusion* find_exclusion(const std::vector<Exclusion>& ex, const std::string& case_name) {
  for (const Exclusion& e : ex)
    if (fnmatch(e.pattern.c_str(), case_name.c_str(), 0) == 0) return &e;
  return nullptr;
}

std::vector<std::string> read_case_list(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw tgc::Error(path + ": cannot open");
  std::vector<std::string> r;
  for (std::string line; std::getline(f, line);) {
    line.erase(0, line.find_first_not_of(" \t"));
    line.erase(line.find_last_not_of(" \t\r") + 1);
    if (!line.empty() && line[0] != '#') r.push_back(line);
  }
  return r;
}

}  // namespace conformance
