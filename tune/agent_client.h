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

// A GPU API the agent may time candidates on.
struct AgentDevice {
  std::string name;  // the device; empty when the agent cannot run the API's candidates ...
  std::string why;   // ... and then why not
};

// The GPU APIs of the agent's greeting, in its line order (docs/tuning.md): each protocol version
// after 1 added one API's line, "<api> <device>" or "no-<api> <why>". A kernel dialect names the
// API that times its candidates (DialectOps::agent_api in codegen/dialect.h).
inline constexpr const char* kAgentApis[] = {"opencl", "vulkan", "cuda"};
inline constexpr int kAgentApiCount = int(sizeof kAgentApis / sizeof kAgentApis[0]);

// What an agent's greeting says: version 1 is one line, "tgc-agent 1 <device>"; version v adds
// the lines of kAgentApis[0 .. v-2].
struct AgentGreeting {
  int version = 0;
  std::string device;                // the CPU: "x86_64 AMD EPYC 7B13"
  AgentDevice apis[kAgentApiCount];  // per kAgentApis row
  // The device of API `name` (one of kAgentApis). Throws tgc::Error for another name.
  const AgentDevice& api(const std::string& name) const;
};
// Parse the first line into g; returns how many more lines the greeting has. Throws tgc::Error.
int parse_agent_greeting(const std::string& line, AgentGreeting& g);
// Parses the greeting's line of API kAgentApis[row] into g. Throws tgc::Error.
void parse_agent_api_line(int row, const std::string& line, AgentGreeting& g);

// Parses a timing reply "ok MIN MEDIAN ITERS SUM ABS_SUM" into t; false when it is not one.
bool parse_agent_reply(const std::string& line, AgentTiming& t);

class AgentClient {
 public:
  // Starts `command` with /bin/sh -c and reads its greeting; throws tgc::Error if it fails.
  AgentClient(std::string command, double timeout_s);
  ~AgentClient();
  AgentClient(const AgentClient&) = delete;
  AgentClient& operator=(const AgentClient&) = delete;

  // What the agent says it runs on ("x86_64 AMD EPYC 7B13"): part of the tuning cache key.
  const std::string& device() const { return greeting_.device; }
  std::string arch() const { return greeting_.device.substr(0, greeting_.device.find(' ')); }
  const AgentGreeting& greeting() const { return greeting_; }

  // Times the shared object `so`. nullopt with `why` set when the agent reports an error, crashes
  // or does not answer within the timeout (then it is restarted).
  // `verb` is the request a dialect's candidates take ("time", "time-cl", "time-vk", "time-cuda": codegen/dialect.h).
  std::optional<AgentTiming> measure(const char* verb, const std::string& payload, int max_iters, double budget_ms,
                                     std::string& why) {
    return request(verb, payload, max_iters, budget_ms, why);
  }
  std::optional<AgentTiming> time(const std::string& so, int max_iters, double budget_ms, std::string& why) {
    return request("time", so, max_iters, budget_ms, why);
  }
  int restarts() const { return restarts_; }

 private:
  std::optional<AgentTiming> request(const char* verb, const std::string& payload, int max_iters, double budget_ms,
                                     std::string& why);
  void start();
  void stop(bool force);
  bool read_line(std::string& line, double timeout_s);  // false on EOF or timeout (timed_out_ says which)
  std::string exit_reason();                            // reaps the agent after EOF

  std::string command_;
  double timeout_s_;
  pid_t pid_ = -1;
  int fd_ = -1;
  std::string pending_;  // bytes read past the last line
  bool timed_out_ = false;
  AgentGreeting greeting_;
  int restarts_ = 0;
};

}  // namespace tgc
