#include "tools/bench/process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace tgc::bench {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::string first_nonempty_line(const std::string& s) {
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (line.find_first_not_of(" \t\r") != std::string::npos) return line;
  return "";
}
}  // namespace

std::string ProcessResult::first_error_line() const {
  std::string line = first_nonempty_line(err);
  if (line.empty()) line = first_nonempty_line(out);
  if (timed_out) return "timed out" + (line.empty() ? "" : ": " + line);
  if (line.empty()) line = exit_code < 0 ? "killed by a signal" : "exit status " + std::to_string(exit_code);
  return line;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& scratch_dir, double timeout_s) {
  ProcessResult r;
  std::string out_path = scratch_dir + "/.stdout", err_path = scratch_dir + "/.stderr";
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    r.err = "fork failed";
    return r;
  }
  if (pid == 0) {
    int o = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int e = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) _exit(126);
    dup2(o, 1);
    dup2(e, 2);
    setpgid(0, 0);  // its own process group, so a timeout kills node's helpers too
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    dprintf(2, "cannot run %s\n", args[0]);
    _exit(127);
  }
  setpgid(pid, pid);  // also here: the child may not have run its own setpgid yet
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (elapsed > timeout_s) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.timed_out && WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

std::optional<double> json_number(const std::string& out, const std::string& key) {
  std::string needle = "\"" + key + "\":";
  size_t at = out.rfind(needle);
  if (at == std::string::npos) return std::nullopt;
  const char* s = out.c_str() + at + needle.size();
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s) return std::nullopt;
  return v;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::string r;
  for (const auto& a : argv) {
    if (!r.empty()) r += ' ';
    bool plain =
        !a.empty() && a.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.,/=:+@%") ==
                          std::string::npos;
    if (plain) {
      r += a;
    } else {
      r += '\'';
      for (char c : a) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
      r += '\'';
    }
  }
  return r;
}

}  // namespace tgc::bench
