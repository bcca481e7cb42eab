// Runs one ONNX backend test case on one target and judges it the way ONNX's backend test
// runner does (onnx/backend/test/runner: same output count, same dtype, np.testing.assert_allclose
// with rtol 1e-3, atol 1e-7, NaN equal to NaN).
#pragma once
#include <string>

#include "tools/onnx-conformance/cases.h"

namespace conformance {

enum class Status { Pass, Fail, Unsupported, Excluded };
const char* status_name(Status s);  // "pass", "fail", "unsupported", "excluded"
Status status_from_name(const std::string& s);

struct Target {
  std::string name = "interp";  // interp (reference interpreter) or a row of target/targets.h (compiled artifact)
  std::string triple;           // for cpu/qcom; empty: the host's
  std::string emulator;         // runs the artifact, e.g. "qemu-aarch64 -L /usr/aarch64-linux-gnu"
  std::string runtime_dir;      // the prebuilt runtime stubs (build/runtime)
};

struct Outcome {
  Status status = Status::Fail;
  std::string detail;  // why it failed or is unsupported; one line
};

// A pass's detail when inputs were fixed at compile time: kFixedInputs + their names.
inline constexpr const char* kFixedInputs = "with --input-value ";

// Unsupported: the importer or the target's compiler rejects the model (a tgc::Error). Fail: the test data
// cannot be read, compiling or running the artifact fails, or an output differs.
Outcome run_case(const Target& target, const Case& c);

// Where the process with this id compiles and runs its artifact (removed when it is done).
std::filesystem::path scratch_dir(int pid);

}  // namespace conformance
