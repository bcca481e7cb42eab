// Child processes for the benchmark driver: run a command with a time limit, capture its output.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace tgc::bench {

struct ProcessResult {
  int exit_code = -1;  // the exit status, or -1 when it was killed or could not start
  bool timed_out = false;
  double wall_s = 0;
  std::string out, err;  // what it printed on stdout and stderr
  // The first line of stderr (or stdout), for one-line failure reports.
  std::string first_error_line() const;
};

// Runs argv[0] (searched in PATH) with stdout/stderr captured through files under `scratch_dir`;
// kills it after `timeout_s` seconds.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& scratch_dir, double timeout_s);

// The number after "key": in the last line of `out` that holds it (the JSON line that
// `ARTIFACT --bench` and `ort_run.js --bench` print last).
std::optional<double> json_number(const std::string& out, const std::string& key);

// The command line as one shell-quoted string, for logs and the report.
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace tgc::bench
