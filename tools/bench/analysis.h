// What the driver derives from a case: the arithmetic it does, the bytes it must move, and
// whether two runs' outputs agree.
#pragma once
#include <optional>
#include <string>

#include "tools/bench/cases.h"

namespace tgc::bench {

// FLOPs of one inference, counted on tgc's imported graph: every sum-reduce of a product
// (what MatMul, Gemm, Conv, ConvTranspose and friends lower to) costs 2 FLOPs per product
// element; reduces of weights alone are left out (they fold at compile time). nullopt when tgc
// cannot import the model.
std::optional<double> count_flops(const Case& c);

// The least memory traffic of one inference: every input read once, every output written once.
double io_bytes(const Case& c, const std::string& output_dir);

struct Agreement {
  bool ok = false;
  double max_err = 0;  // max |a - b| / max |b| over all outputs (b: the reference)
  std::string detail;  // empty when ok; else what differs
};

// Compares every DIR_B/*.npy (the reference, onnxruntime) with DIR_A's file of the same name:
// they agree when max |a - b| <= tol * max |b| per output and NaNs sit at the same places.
Agreement compare_outputs(const std::string& dir_a, const std::string& dir_b, double tol);

}  // namespace tgc::bench
