// Runs each case in its own child process, a few at a time, under a time limit: a crash or a hang
// of the compiler or the artifact then fails that case instead of ending the whole run.
#pragma once
#include <functional>

#include "tools/onnx-conformance/run_case.h"

namespace conformance {

// Calls work(i) for i in [0, n) in child processes, at most `jobs` at once, and done(i, outcome)
// in this process as each finishes (in completion order). A child that dies by a signal or runs
// past timeout_s seconds (it and its own children are killed) gives a Fail outcome saying so.
void run_isolated(size_t n, int jobs, int timeout_s, const std::function<Outcome(size_t)>& work,
                  const std::function<void(size_t, const Outcome&)>& done);

}  // namespace conformance
