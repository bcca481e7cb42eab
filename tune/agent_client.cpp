#include "tune/agent_client.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "ir/error.h"

namespace tgc {

namespace {
constexpr const char* kGreeting = "tgc-agent ";
constexpr double kGreetingTimeoutS = 30;  // ssh or adb may take a while to connect

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

int parse_agent_greeting(const std::string& line, AgentGreeting& g) {
  auto bad = [&] {
    return Error("expected the greeting 'tgc-agent 1|2|3|4 <device>', got '" + line.substr(0, 200) + "'");
  };
  if (line.rfind(kGreeting, 0) != 0) throw bad();
  size_t v = std::strlen(kGreeting), sp = line.find(' ', v);
  std::string version = line.substr(v, sp == std::string::npos ? std::string::npos : sp - v);
  if (version.size() != 1 || version[0] < '1' || version[0] > '4') {
    if (version.empty() || version.find_first_not_of("0123456789") != std::string::npos) throw bad();
    throw Error("tgc-agent speaks protocol version " + version +
                ", this tgc knows 1 to 4 (use the tgc-agent built with this tgc)");
  }
  if (sp == std::string::npos || sp + 1 >= line.size()) throw bad();
  g = AgentGreeting{};
  g.version = version[0] - '0';
  g.device = line.substr(sp + 1);
  for (int row = g.version - 1; row < kAgentApiCount; ++row)
    g.apis[row].why = "it is an older tgc-agent (protocol " + version + ", no " + kAgentApis[row] + ")";
  return g.version - 1;
}

const AgentDevice& AgentGreeting::api(const std::string& name) const {
  for (int row = 0; row < kAgentApiCount; ++row)
    if (name == kAgentApis[row]) return apis[row];
  throw Error("internal error: tgc-agent has no API '" + name + "'");
}

void parse_agent_api_line(int row, const std::string& line, AgentGreeting& g) {
  std::string api = kAgentApis[row], yes = api + " ", no = "no-" + api + " ";
  AgentDevice& d = g.apis[row];
  if (line.rfind(yes, 0) == 0 && line.size() > yes.size())
    d = {line.substr(yes.size()), ""};
  else if (line.rfind(no, 0) == 0 && line.size() > no.size())
    d = {"", line.substr(no.size())};
  else
    throw Error("expected the greeting's '" + api + " <device>' or 'no-" + api + " <why>' line, got '" +
                line.substr(0, 200) + "'");
}

bool parse_agent_reply(const std::string& line, AgentTiming& t) {
  if (line.rfind("ok ", 0) != 0) return false;
  // strtod rather than a stream: the checksums may be "nan" or "-inf".
  double* fields[] = {&t.min_us, &t.median_us, nullptr, &t.out_sum, &t.out_abs_sum};
  const char* p = line.c_str() + 3;
  for (double* f : fields) {
    char* end = nullptr;
    double v = std::strtod(p, &end);
    if (end == p) return false;
    p = end;
    if (f) *f = v;
    // The count is cast only when it fits: a nan or 1e300 there is a malformed reply, not UB.
    else if (v >= 0 && v < 9e18)
      t.iters = static_cast<long long>(v);
    else
      return false;
  }
  return true;
}

AgentClient::AgentClient(std::string command, double timeout_s) : command_(std::move(command)), timeout_s_(timeout_s) {
  start();
}

AgentClient::~AgentClient() { stop(false); }

void AgentClient::start() {
  // A socket rather than pipes: send() with MSG_NOSIGNAL reports a dead agent as an error
  // instead of killing tgc with SIGPIPE.
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw Error(std::string("socketpair: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(sv[0]), close(sv[1]);
    throw Error(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own process group, so a timeout kills the shell and the agent
    dup2(sv[1], 0);
    dup2(sv[1], 1);
    execl("/bin/sh", "sh", "-c", command_.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  close(sv[1]);
  pid_ = pid, fd_ = sv[0], pending_.clear();
  std::string line;
  double wait_s = std::max(kGreetingTimeoutS, timeout_s_);
  try {
    for (int n = 0, lines = 1; n < lines; ++n) {
      if (!read_line(line, wait_s))
        throw Error(timed_out_ ? "no greeting within " + std::to_string(int(wait_s)) + " s" : exit_reason());
      if (n == 0)
        lines = parse_agent_greeting(line, greeting_) + 1;
      else
        parse_agent_api_line(n - 1, line, greeting_);
    }
  } catch (const Error& e) {
    stop(true);
    throw Error("tuning agent '" + command_ + "': " + e.what());
  }
}

void AgentClient::stop(bool force) {
  if (fd_ >= 0) {
    static const char quit[] = "quit\n";
    if (!force) send(fd_, quit, sizeof quit - 1, MSG_NOSIGNAL);
    close(fd_);
    fd_ = -1;
  }
  if (pid_ < 0) return;
  // A polite agent exits on quit or EOF at once; give it a moment, then kill the group.
  int status;
  for (int i = 0; i < (force ? 0 : 50); ++i) {
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(-pid_, SIGKILL);
  kill(pid_, SIGKILL);
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

bool AgentClient::read_line(std::string& line, double timeout_s) {
  timed_out_ = false;
  double deadline = now_s() + timeout_s;
  for (;;) {
    if (size_t nl = pending_.find('\n'); nl != std::string::npos) {
      line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return true;
    }
    double left = deadline - now_s();
    if (left <= 0) {
      timed_out_ = true;
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    int r = poll(&p, 1, int(left * 1000) + 1);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) continue;  // the deadline check above decides
    char buf[4096];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    pending_.append(buf, size_t(n));
  }
}

std::string AgentClient::exit_reason() {
  int status = 0;
  // The agent closed its output; it exits right after (or is a shell reporting a missing command).
  bool reaped = false;
  for (int i = 0; i < 200 && !reaped; ++i) {
    reaped = waitpid(pid_, &status, WNOHANG) == pid_;
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!reaped) return "closed its output";
  pid_ = -1;
  // Through /bin/sh, a signal shows as status 128 + signal.
  if (WIFEXITED(status) && WEXITSTATUS(status) > 128)
    return "crashed (signal " + std::to_string(WEXITSTATUS(status) - 128) + ")";
  if (WIFSIGNALED(status))
    return "crashed (signal " + std::to_string(WTERMSIG(status)) + ", " + strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

std::optional<AgentTiming> AgentClient::request(const char* verb, const std::string& payload, int max_iters,
                                                double budget_ms, std::string& why) {
  std::ostringstream header;
  header << verb << " " << payload.size() << " " << max_iters << " " << budget_ms << "\n";
  std::string msg = header.str() + payload;
  bool sent = true;
  for (size_t off = 0; off < msg.size() && sent;) {
    pollfd p{fd_, POLLOUT, 0};
    if (poll(&p, 1, int(timeout_s_ * 1000)) <= 0) {
      sent = false;
      break;
    }
    ssize_t n = send(fd_, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      sent = false;
    else
      off += size_t(n);
  }
  std::string line;
  if (sent && read_line(line, timeout_s_)) {
    if (line.rfind("ok ", 0) == 0) {
      AgentTiming t;
      if (parse_agent_reply(line, t)) return t;
      why = "malformed reply '" + line.substr(0, 200) + "'";
      return std::nullopt;
    }
    why = line.rfind("err ", 0) == 0 ? line.substr(4) : "unexpected reply '" + line.substr(0, 200) + "'";
    if (line.rfind("err ", 0) == 0) return std::nullopt;  // the agent is fine; only this candidate failed
  } else {
    why = timed_out_ ? "no answer within " + std::to_string(timeout_s_) + " s" : "the agent " + exit_reason();
  }
  // Crashed, hung or confused: start a fresh agent (this throws if that fails).
  stop(true);
  ++restarts_;
  start();
  return std::nullopt;
}

}  // namespace tgc
