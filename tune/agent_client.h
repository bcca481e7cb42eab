// The tgc side of tgc-agent's protocol (docs/tuning.md): starts the agent through any shell
// command (local path, qemu, ssh, adb), sends it candidates and reads back their timings. A
// candidate that crashes the agent or runs past the timeout is dropped and the agent restarted;
// only an agent that cannot be (re)started is an error.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>

namespace tgc {

struct AgentTiming {
  double min_us = 0, median_us = 0;
  long long iters = 0;
  double out_sum = 0, out_abs_sum = 0;  // checksum of the output buffer
};

class AgentClient {
 public:
  // Starts `command` with /bin/sh -c and reads its greeting; throws tgc::Error if it fails.
  AgentClient(std::string command, double timeout_s);
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  // What the agent says it runs on ("x86_64 AMD EPYC 7B13"): part of the tuning cache key.
  const std::string& device() const { return device_; }
  std::string arch() const { return device_.substr(0, device_.find(' ')); }

  // Times the shared object `so`. nullopt with `why` set when the agent reports an error, crashes
  // or does not answer within the timeout (then it is restarted).
  std::optional<AgentTiming> time(const std::string& so, int max_iters, double budget_ms, std::string& why);
  int restarts() const { return restarts_; }

 private:
  void start();
  void stop(bool force);
  bool read_line(std::string& line, double timeout_s);  // false on EOF or timeout (timed_out_ says which)
  std::string exit_reason();                           // reaps the agent after EOF

  std::string command_;
  double timeout_s_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string pending_;  // bytes read past the last line
  bool timed_out_ = false;
  std::string device_;
  int restarts_ = 0;
};

}  // namespace tgc
