#include "tools/onnx-conformance/run_case.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include "codegen/pipeline.h"
#include "frontend/npy.h"
#include "frontend/onnx/onnx_import.h"
#include "ir/error.h"
#include "ir/interpret.h"

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
    if (e.is_directory() && e.path().filename().string().starts_with("test_data_set_")) sets.push_back({e.path(), {}, {}});
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
      std::string how = code > 128 ? "crashed (signal " + std::to_string(code - 128) + ")" : "exited with status " + std::to_string(code);
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
}  // namespace

fs::path scratch_dir(int pid) { return fs::temp_directory_path() / ("tgc-conf-" + std::to_string(pid)); }

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
    for (size_t i = 0; i < c.inputs.size() && i < sets[0].inputs.size(); ++i) opt.shape_hints[c.inputs[i]] = sets[0].inputs[i].shape;
  Model m;
  try {
    m = import_onnx((c.dir / "model.onnx").string(), opt);
  } catch (const Error& e) {
    return {Status::Unsupported, without_path(e.what(), c.dir)};
  }
  if (!data_error.empty()) return {Status::Fail, "test data: " + data_error};

  try {
    std::optional<Artifact> artifact;
    if (target.name != "interp") artifact.emplace(target, m);
    for (DataSet& s : sets) {
      std::string set = s.dir.filename().string() + ": ";
      if (s.inputs.size() != m.inputs.size())
        return {Status::Fail, set + "model has " + std::to_string(m.inputs.size()) + " inputs, data set " + std::to_string(s.inputs.size())};
      if (s.outputs.size() != m.outputs.size())
        return {Status::Fail, set + "model has " + std::to_string(m.outputs.size()) + " outputs, data set " + std::to_string(s.outputs.size())};
      std::map<int64_t, HostTensor> feeds;
      for (size_t i = 0; i < s.inputs.size(); ++i) {
        const Tensor& declared = m.inputs[i].tensor;
        as_declared_bf16(s.inputs[i], declared.dtype());
        if (s.inputs[i].dtype != declared.dtype() || s.inputs[i].shape != declared.shape())
          return {Status::Fail, set + "input " + std::to_string(i) + " ('" + m.inputs[i].name + "') is " +
                                    std::string(dtype_name(s.inputs[i].dtype)) + shape_str(s.inputs[i].shape) + ", the model declares " +
                                    std::string(dtype_name(declared.dtype())) + shape_str(declared.shape())};
        feeds[declared.uop()->ival()] = s.inputs[i];
      }
      std::vector<const UOp*> roots;
      for (const auto& o : m.outputs) roots.push_back(o.tensor.uop());
      std::vector<HostTensor> got = artifact ? artifact->run(m, s.inputs) : interpret(*m.graph, roots, feeds);
      for (size_t i = 0; i < s.outputs.size(); ++i) {
        as_declared_bf16(s.outputs[i], m.outputs[i].tensor.dtype());
        std::string why;
        if (!close(got[i], s.outputs[i], why)) return {Status::Fail, set + "output " + std::to_string(i) + ": " + why};
      }
    }
  } catch (const std::exception& e) {
    return {Status::Fail, without_path(e.what(), c.dir)};
  }
  return {Status::Pass, ""};
}

}  // namespace conformance
