// ONNX backend test cases on disk: finding them, naming them ("node/test_abs"), the op type each
// counts for in the report, and the exclusion file.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace conformance {

struct Case {
  std::string name;                 // "<data dir name>/<case dir name>", e.g. "node/test_abs"
  std::filesystem::path dir;        // holds model.onnx and test_data_set_*/
  std::string op;                   // the op type the case counts for (see main_op_type)
  std::vector<std::string> inputs;  // graph inputs that are not initializers, in order
};

// Every case under each path. A path is either a data dir holding case dirs (its cases are
// named after the path's last component) or a root holding such data dirs. Sorted by name.
std::vector<Case> discover_cases(const std::vector<std::filesystem::path>& data);

// The op type a case counts for: a "X_expanded" case (a function op's body, inlined) counts for
// the op of its twin X; any other case for its first node that is not a Constant.
std::string main_op_type(const std::filesystem::path& case_dir);

struct Exclusion {
  std::string pattern;  // glob on the case name (fnmatch)
  std::string reason;
};

// Lines "PATTERN REASON..." ('#' starts a comment line). A pattern without a reason is an error.
std::vector<Exclusion> read_exclusions(const std::string& path);
// The reason a case is excluded, or nullptr.
const Exclusion* find_exclusion(const std::vector<Exclusion>& ex, const std::string& case_name);

// Case names listed in FILE, one per line ('#' starts a comment line).
std::vector<std::string> read_case_list(const std::string& path);

}  // namespace conformance
