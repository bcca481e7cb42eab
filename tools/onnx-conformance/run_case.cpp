#include "tools/onnx-conformance/run_case.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "codegen/pipeline.h"
#include "frontend/npy.h"
#include "frontend/frontend.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/error.h"
#include "model/evaluate.h"

namespace fs = std::filesystem;
using namespace tgc;

namespace conformance {

const char* status_name(Status s) {
  switch (s) {
    case Status::Pass: return "pass";
    case Status::Fail: return "fail";
    case Status::Unsupported: return "unsupported";
    case Status::Excluded: return "excluded";
  }
  return "?";
}

Status status_from_name(const std::string& s) {
  for (Status st : {Status::Pass, Status::Fail, Status::Unsupported, Status::Excluded})
    if (s == status_name(st)) return st;
  throw Error("unknown status '" + s + "'");
}

namespace {
struct DataSet {
  fs::path dir;
  std::vector<HostTensor> inputs, outputs;
};

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> r;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) return r;
    r.push_back(p);
  }
}

std::vector<DataSet> read_data_sets(const fs::path& case_dir) {
  std::vector<DataSet> sets;
  for (const auto& e : fs::directory_iterator(case_dir))
    if (e.is_directory() && e.path().filename().string().starts_with("test_data_set_"))
      sets.push_back({e.path(), {}, {}});
  if (sets.empty()) throw Error("no test_data_set_* directory");
  std::sort(sets.begin(), sets.end(), [](const DataSet& a, const DataSet& b) { return a.dir < b.dir; });
  for (DataSet& s : sets) {
    for (const auto& p : numbered(s.dir, "input_")) s.inputs.push_back(read_onnx_tensor(p.string()));
    for (const auto& p : numbered(s.dir, "output_")) s.outputs.push_back(read_onnx_tensor(p.string()));
  }
  return sets;
}

// ONNX 1.12's test data stores bfloat16 tensors as uint16 bit patterns (numpy has no bfloat16):
// where the model says bf16 and the data says u16, the data is those bits.
void as_declared_bf16(HostTensor& t, DType declared) {
  if (declared == DType::BF16 && t.dtype == DType::U16) t.dtype = DType::BF16;
}

bool close(const HostTensor& got, const HostTensor& want, std::string& why) {
  if (got.dtype != want.dtype) {
    why = "dtype " + std::string(dtype_name(got.dtype)) + " != expected " + std::string(dtype_name(want.dtype));
    return false;
  }
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

std::string first_line(const fs::path& file) {
  std::ifstream f(file);
  std::string line;
  std::getline(f, line);
  return line;
}

// A compiled artifact in a scratch directory, run once per data set.
class Artifact {
 public:
  Artifact(const Target& t, Model& m) : target_(t), work_(scratch_dir(getpid())) {
    fs::remove_all(work_);
    fs::create_directories(work_);
    CompileOptions opt;
    opt.target = t.name;
    opt.triple = t.triple;
    opt.output = (work_ / "model").string();
    opt.runtime_dir = t.runtime_dir;
    try {
      compile_model(m, opt);
    } catch (...) {
      fs::remove_all(work_);  // no destructor runs for a constructor that throws
      throw;
    }
  }
  ~Artifact() { fs::remove_all(work_); }

  std::vector<HostTensor> run(const Model& m, const std::vector<HostTensor>& ins) {
    fs::path out = work_ / "out";
    fs::remove_all(out);
    fs::create_directories(out);
    // Concurrent pocl processes share one kernel dir (~/.cache/pocl/uncached with the kernel
    // cache off) and fail ("Can't get stat() on .../uncached/..."): each case gets its own, and
    // its own tgc OpenCL binary cache unless the caller chose one.
    std::string cmd = "POCL_CACHE_DIR='" + (work_ / "pocl").string() + "' ";
    if (!std::getenv("TGC_CL_CACHE")) cmd += "TGC_CL_CACHE='" + (work_ / "clcache").string() + "' ";
    cmd += target_.emulator.empty() ? "" : target_.emulator + " ";
    cmd += "'" + (work_ / "model").string() + "'";
    for (size_t i = 0; i < ins.size(); ++i) {
      HostTensor raw = ins[i];
      if (raw.dtype == DType::BF16) raw.dtype = DType::U16;  // the artifact reads bf16 as raw '<u2'
      std::string f = (work_ / ("in" + std::to_string(i) + ".npy")).string();
      write_npy(f, raw);
      cmd += " -i '" + file_safe(m.inputs[i].name) + "=" + f + "'";
    }
    fs::path log = work_ / "log";
    cmd += " -o '" + out.string() + "' > '" + log.string() + "' 2>&1";
    int rc = std::system(cmd.c_str());
    if (rc != 0) {
      int code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
      std::string how = code > 128 ? "crashed (signal " + std::to_string(code - 128) + ")"
                                   : "exited with status " + std::to_string(code);
      throw Error("artifact " + how + ": " + first_line(log));
    }
    std::vector<HostTensor> outs;
    for (const auto& o : m.outputs) {
      outs.push_back(read_npy((out / (file_safe(o.name) + ".npy")).string()));
      as_declared_bf16(outs.back(), o.tensor.dtype());
    }
    return outs;
  }

 private:
  const Target& target_;
  fs::path work_;
};

// Strips the model path that import errors start with: the case name already says it.
std::string without_path(std::string msg, const fs::path& case_dir) {
  std::string prefix = (case_dir / "model.onnx").string() + ": ";
  if (msg.starts_with(prefix)) msg.erase(0, prefix.size());
  return msg;
}

// The graph input an import error asks to know at compile time ("input 1 ('shape') must be a
// compile-time constant, but depends on a model input"): its index in c.inputs, or -1.
int input_to_fix(const std::string& msg, const Case& c) {
  const std::string tail = "') must be a compile-time constant, but depends on a model input";
  size_t end = msg.find(tail), begin = end == std::string::npos ? end : msg.rfind("('", end);
  if (begin == std::string::npos) return -1;
  auto it = std::find(c.inputs.begin(), c.inputs.end(), msg.substr(begin + 2, end - begin - 2));
  return it == c.inputs.end() ? -1 : int(it - c.inputs.begin());
}

std::vector<double> values_of(const HostTensor& t) {
  std::vector<double> v(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[size_t(i)] = t.get(i);
  return v;
}

// Compiles `m` (unless the target is the interpreter) and judges it on `sets`, whose inputs at
// the indices in `fixed` are compiled into the model. nullopt: every output matches.
std::optional<Outcome> judge(const Target& target, Model& m, const std::vector<DataSet*>& sets,
                             const std::set<size_t>& fixed) {
  std::optional<Artifact> artifact;
  // The target's compiler refusing the model (a construct it does not handle) makes the case
  // unsupported there, as the importer's refusal does; its internal errors are failures.
  if (target.name != "interp") try {
      artifact.emplace(target, m);
    } catch (const Error& e) {
      if (std::string(e.what()).starts_with("internal error")) throw;
      return Outcome{Status::Unsupported, e.what()};
    }
  for (DataSet* s : sets) {
    std::string set = s->dir.filename().string() + ": ";
    std::vector<HostTensor> ins;
    for (size_t i = 0; i < s->inputs.size(); ++i)
      if (!fixed.count(i)) ins.push_back(s->inputs[i]);
    if (ins.size() != m.inputs.size())
      return Outcome{Status::Fail, set + "model has " + std::to_string(m.inputs.size()) + " inputs, data set " +
                                       std::to_string(ins.size())};
    if (s->outputs.size() != m.outputs.size())
      return Outcome{Status::Fail, set + "model has " + std::to_string(m.outputs.size()) + " outputs, data set " +
                                       std::to_string(s->outputs.size())};
    std::map<int64_t, HostTensor> feeds;
    for (size_t i = 0; i < ins.size(); ++i) {
      const Tensor& declared = m.inputs[i].tensor;
      as_declared_bf16(ins[i], declared.dtype());
      if (ins[i].dtype != declared.dtype() || ins[i].shape != declared.shape())
        return Outcome{Status::Fail, set + "input '" + m.inputs[i].name + "' is " +
                                         std::string(dtype_name(ins[i].dtype)) + shape_str(ins[i].shape) +
                                         ", the model declares " + std::string(dtype_name(declared.dtype())) +
                                         shape_str(declared.shape())};
      feeds[declared.uop()->ival()] = ins[i];
    }
    std::vector<HostTensor> got = artifact ? artifact->run(m, ins) : evaluate(m, feeds);
    for (size_t i = 0; i < s->outputs.size(); ++i) {
      as_declared_bf16(s->outputs[i], m.outputs[i].tensor.dtype());
      std::string why;
      if (!close(got[i], s->outputs[i], why))
        return Outcome{Status::Fail, set + "output " + std::to_string(i) + ": " + why};
    }
  }
  return std::nullopt;
}
}  // namespace

fs::path scratch_dir(int pid) { return fs::temp_directory_path() / ("tgc-conf-" + std::to_string(pid)); }

// An input that decides a shape (Reshape's shape, Resize's scales, TopK's k) is fixed at compile
// time from the data set, as a user would with --input-value; the model is then compiled once
// per distinct value of those inputs among the data sets.
Outcome run_case(const Target& target, const Case& c) {
  std::vector<DataSet> sets;
  std::string data_error;
  try {
    sets = read_data_sets(c.dir);
  } catch (const std::exception& e) {
    data_error = e.what();
  }
  // Dims the model leaves symbolic take their size from the first data set, as in `tgc eval`.
  ImportOptions opt;
  if (!sets.empty())
    for (size_t i = 0; i < c.inputs.size() && i < sets[0].inputs.size(); ++i)
      opt.shape_hints[c.inputs[i]] = sets[0].inputs[i].shape;
  std::set<size_t> fixed;
  auto import_with = [&](const DataSet& s) {
    for (size_t i : fixed) opt.input_values[c.inputs[i]] = values_of(s.inputs[i]);
    return import_model((c.dir / "model.onnx").string(), opt);
  };
  Model m;
  for (;;) {
    try {
      m = sets.empty() ? import_model((c.dir / "model.onnx").string(), opt) : import_with(sets[0]);
      break;
    } catch (const Error& e) {
      int i = sets.empty() ? -1 : input_to_fix(e.what(), c);
      if (i < 0 || fixed.count(size_t(i)) || size_t(i) >= sets[0].inputs.size())
        return {Status::Unsupported, without_path(e.what(), c.dir)};
      fixed.insert(size_t(i));
    }
  }
  if (!data_error.empty()) return {Status::Fail, "test data: " + data_error};

  try {
    // Data sets grouped by the values of the fixed inputs; the first group uses `m`.
    std::map<std::vector<std::vector<double>>, std::vector<DataSet*>> groups;
    auto key = [&](const DataSet& s) {
      std::vector<std::vector<double>> k;
      for (size_t i : fixed) k.push_back(values_of(s.inputs[i]));
      return k;
    };
    for (DataSet& s : sets) groups[key(s)].push_back(&s);
    for (auto& [k, group] : groups) {
      bool first = k == key(sets[0]);
      Model other = first ? Model{} : import_with(*group[0]);
      if (auto bad = judge(target, first ? m : other, group, fixed)) return *bad;
    }
  } catch (const std::exception& e) {
    return {Status::Fail, without_path(e.what(), c.dir)};
  }
  std::string how;
  for (size_t i : fixed) how += (how.empty() ? kFixedInputs : ", ") + c.inputs[i];
  return {Status::Pass, how};
}

}  // namespace conformance
