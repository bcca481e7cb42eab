#include "tools/bench/analysis.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unordered_map>

#include "frontend/npy.h"
#include "frontend/frontend.h"
#include "ir/error.h"

namespace fs = std::filesystem;

namespace tgc::bench {

std::optional<double> count_flops(const Case& c) {
  ImportOptions opt;
  for (const auto& in : c.inputs)
    if (in.shape_fixed) opt.input_shapes[in.name] = in.shape;
  Model m;
  try {
    m = import_model(c.model, opt);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::vector<const UOp*> roots;
  for (const auto& out : m.outputs) roots.push_back(out.tensor.uop());
  std::unordered_map<const UOp*, bool> from_input;
  double flops = 0;
  for (const UOp* u : toposort(roots)) {
    bool dep = u->op == Op::Buffer && m.graph->buffer(u->ival()).kind == BufferKind::Input;
    for (const UOp* s : u->src) dep = dep || from_input[s];
    from_input[u] = dep;
    if (dep && u->op == Op::Reduce && u->reduce().op == Op::Add && u->src[0]->op == Op::Mul)
      flops += 2.0 * double(numel(u->src[0]->shape));
  }
  return flops;
}

double io_bytes(const Case& c, const std::string& output_dir) {
  double bytes = 0;
  for (const auto& in : c.inputs) bytes += double(numel(in.shape)) * dtype_size(in.dtype);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(output_dir, ec))
    if (e.path().extension() == ".npy") {
      HostTensor t = read_npy(e.path().string());
      bytes += double(t.bytes.size());
    }
  return bytes;
}

Agreement compare_outputs(const std::string& dir_a, const std::string& dir_b, double tol) {
  Agreement r;
  std::vector<fs::path> refs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir_b, ec))
    if (e.path().extension() == ".npy") refs.push_back(e.path());
  std::sort(refs.begin(), refs.end());
  if (refs.empty()) {
    r.detail = "no reference outputs";
    return r;
  }
  r.ok = true;
  for (const auto& ref_path : refs) {
    std::string name = ref_path.stem().string();
    fs::path got_path = fs::path(dir_a) / ref_path.filename();
    if (!fs::exists(got_path)) {
      r.ok = false;
      r.detail = name + ": missing";
      continue;
    }
    HostTensor a, b;
    try {
      a = read_npy(got_path.string());
      b = read_npy(ref_path.string());
    } catch (const Error& e) {
      r.ok = false;
      r.detail = e.what();
      continue;
    }
    if (a.shape != b.shape) {
      r.ok = false;
      r.detail = name + ": shape " + shape_str(a.shape) + " vs " + shape_str(b.shape);
      continue;
    }
    double scale = 0, err = 0;
    int64_t nan_mismatch = 0;
    for (int64_t i = 0; i < b.numel(); ++i) {
      double x = a.get(i), y = b.get(i);
      if (std::isnan(x) || std::isnan(y)) {
        nan_mismatch += std::isnan(x) != std::isnan(y);
        continue;
      }
      if (std::isfinite(y)) scale = std::max(scale, std::fabs(y));
      if (x != y) err = std::max(err, std::fabs(x - y));  // equal infinities agree
    }
    double rel = scale > 0 ? err / scale : err;
    r.max_err = std::max(r.max_err, rel);
    if (nan_mismatch || rel > tol || std::isnan(rel)) {
      r.ok = false;
      r.detail = name + (nan_mismatch ? ": NaN at " + std::to_string(nan_mismatch) + " places that differ"
                                      : ": max error " + std::to_string(rel) + " of its largest value");
    }
  }
  return r;
}

}  // namespace tgc::bench
