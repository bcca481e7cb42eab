#include "tools/onnx-conformance/results.h"

#include <fstream>
#include <sstream>

#include "ir/error.h"

namespace conformance {

namespace {
std::string one_field(std::string s) {
  for (char& ch : s)
    if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
  return s;
}
}  // namespace

void write_results(const std::string& path, const RunResults& r) {
  std::ofstream f(path);
  if (!f) throw tgc::Error(path + ": cannot write");
  f << "#label\t" << one_field(r.label) << "\n#target\t" << one_field(r.target) << "\n#selection\t"
    << one_field(r.selection) << "\n#command\t" << one_field(r.command) << "\n#seconds\t" << r.seconds << "\n#jobs\t"
    << r.jobs << "\n";
  for (const CaseResult& c : r.cases)
    f << c.name << "\t" << c.op << "\t" << status_name(c.status) << "\t" << one_field(c.detail) << "\n";
  if (!f) throw tgc::Error(path + ": write failed");
}

RunResults read_results(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw tgc::Error(path + ": cannot open");
  RunResults r;
  int n = 0;
  for (std::string line; std::getline(f, line);) {
    ++n;
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, '\t');) fields.push_back(x);
    if (fields.empty()) continue;
    if (line[0] == '#') {
      std::string value = fields.size() > 1 ? fields[1] : "";
      if (fields[0] == "#label")
        r.label = value;
      else if (fields[0] == "#target")
        r.target = value;
      else if (fields[0] == "#selection")
        r.selection = value;
      else if (fields[0] == "#command")
        r.command = value;
      else if (fields[0] == "#seconds")
        r.seconds = std::stod(value);
      else if (fields[0] == "#jobs")
        r.jobs = std::stoi(value);
      continue;
    }
    if (fields.size() < 3) throw tgc::Error(path + ":" + std::to_string(n) + ": expected name, op, status, detail");
    r.cases.push_back({fields[0], fields[1], status_from_name(fields[2]), fields.size() > 3 ? fields[3] : ""});
  }
  return r;
}

}  // namespace conformance
