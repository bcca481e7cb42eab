// The outcome of one conformance run, saved as a TSV file so that runs on several targets (made
// separately, some slow) can be merged into one report.
#pragma once
#include <string>
#include <vector>

#include "tools/onnx-conformance/run_case.h"

namespace conformance {

struct CaseResult {
  std::string name, op;
  Status status;
  std::string detail;
};

struct RunResults {
  std::string label;      // the report's column for this run, e.g. "cpu" or "qcom (pocl)"
  std::string target;     // what ran the cases, e.g. "cpu x86_64-linux-gnu"
  std::string selection;  // which cases, e.g. "all under /usr/share/libonnx-testdata/data"
  std::string command;    // the runner's command line
  double seconds = 0;
  int jobs = 1;
  std::vector<CaseResult> cases;
};

// Header lines "#key<TAB>value", then one line per case: name, op, status, detail.
void write_results(const std::string& path, const RunResults& r);
RunResults read_results(const std::string& path);

}  // namespace conformance
